# One precompiled header for the whole build: the two heavy libraries nearly
# every file includes (Eigen and nlohmann_json, about 3.5 s of parsing each per
# file on a 2-core machine) and the standard headers most files use. The layer
# libraries share zibert_base's; the program adds CLI11 and the tests Catch2,
# each in a header of its own (their compile flags differ from the libraries').
# Nothing a file includes changes: a precompiled header only holds what the
# file would have parsed anyway. The inliner's order can move (GCC 12's string
# warnings moved with it), so results were compared: bench/check-identical
# found them all identical.
set(ZIBERT_PRECOMPILED <algorithm> <cmath> <cstdint> <cstdio> <functional> <map> <memory>
                       <optional> <string> <vector> <Eigen/Dense> <nlohmann/json.hpp>)
target_precompile_headers(zibert_base PRIVATE ${ZIBERT_PRECOMPILED})
foreach(layer IN LISTS ZIBERT_LAYERS)
  if(NOT layer STREQUAL "base" AND NOT layer STREQUAL "cli")
    target_precompile_headers(zibert_${layer} REUSE_FROM zibert_base)
  endif()
endforeach()

# zibert_precompiled(target header…): the shared headers and the target's own.
function(zibert_precompiled target)
  target_precompile_headers(${target} PRIVATE ${ZIBERT_PRECOMPILED} ${ARGN})
endfunction()
