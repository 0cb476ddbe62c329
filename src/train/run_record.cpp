#include "zibert/train/run_record.hpp"

#include <filesystem>

#include "zibert/base/error.hpp"
#include "zibert/base/io.hpp"
#include "zibert/base/world.hpp"

namespace zibert {
namespace {

std::string absolute_path(const std::string& path) {
  return path.empty() || path == "-" ? path : std::filesystem::absolute(path).lexically_normal().string();
}

}  // namespace

RunRecord::RunRecord(const Checkpoint* resumed, const std::string& checkpoint_path)
    : resumed_(resumed != nullptr), checkpoint_(checkpoint_path) {
  if (!resumed) {
    record_["ranks"] = World::get().size();
    return;
  }
  try {
    record_ = resumed->state().at("run");
  } catch (const nlohmann::json::exception& e) {
    throw Error(checkpoint_ + ": the checkpoint's training state is damaged (" + std::string(e.what()) + ")");
  }
  const int ranks = record_.value("ranks", 1), now = World::get().size();
  if (ranks != now)
    throw Error(checkpoint_ + ": the run was checkpointed over " + std::to_string(ranks) + " MPI rank(s); resume it "
                "over as many (now " + std::to_string(now) + "): the split of each batch shapes the arithmetic");
}

const nlohmann::json& RunRecord::get(const char* key) const {
  try {
    return record_.at(key);
  } catch (const nlohmann::json::exception& e) {
    throw Error(checkpoint_ + ": the checkpoint's training state is damaged (" + std::string(e.what()) + ")");
  }
}

void RunRecord::path(const char* key, std::string& value) {
  if (!resumed_) {
    record_[key] = absolute_path(value);
    return;
  }
  value = get(key).get<std::string>();
}

void RunRecord::paths(const char* key, std::vector<std::string>& values) {
  if (!resumed_) {
    nlohmann::json list = nlohmann::json::array();
    for (const std::string& v : values) list.push_back(absolute_path(v));
    record_[key] = list;
    return;
  }
  values = record_.value(key, std::vector<std::string>{});  // a list a run may lack (outliers)
}

void RunRecord::value(const char* key, double& value) {
  if (!resumed_)
    record_[key] = value;
  else
    value = get(key).get<double>();
}

void RunRecord::value(const char* key, std::int64_t& value) {
  if (!resumed_)
    record_[key] = value;
  else
    value = record_.value(key, std::int64_t{0});
}

void RunRecord::value(const char* key, bool& value) {
  if (!resumed_)
    record_[key] = value;
  else
    value = record_.value(key, false);
}

void RunRecord::file(const char* key, const char* print_key, std::string& path, const std::string& what) {
  this->path(key, path);
  if (path == "-") return;
  const std::string print = path.empty() ? "" : file_fingerprint(path);
  if (!resumed_) {
    record_[print_key] = print;
    return;
  }
  if (print != get(print_key).get<std::string>())
    throw Error(path + ": changed since the checkpoint was written; --resume needs the same " + what);
}

}  // namespace zibert
