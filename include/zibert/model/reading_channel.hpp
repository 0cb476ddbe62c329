// The reading channel's table for a vocabulary (ModelConfig::readings): the
// syllables each token is read as, from a readings table (text/readings.hpp).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "zibert/model/config.hpp"
#include "zibert/text/readings.hpp"

namespace zibert {

// Every token that is one character (or WordPiece's "##" and one character)
// gets the syllables `table` reads it as; the others (specials, Latin
// letters, words) get none. With `from`, the table of a vocabulary that
// `tokens` extends (train --init --extend-vocab): its syllables keep their
// rows and its tokens their readings; syllables new to it come after.
// Throws Error when no token has a reading.
std::shared_ptr<const TokenReadings> token_readings(const std::vector<std::string>& tokens, const Readings& table,
                                                    const TokenReadings* from = nullptr);

}  // namespace zibert
