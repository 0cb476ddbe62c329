// What a training run consists of, kept in its checkpoint so --resume runs it again.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "zibert/train/checkpoint.hpp"

namespace zibert {

// The run's record, the checkpoint's "run" object, written by a new run and
// read back by a resumed one through the same calls: each binds one field
// of the command's options to one key. On a new run it records the value
// (paths made absolute: --resume may run from another directory); on a
// resumed run it sets the value from the record. So a command says once
// what its run consists of.
class RunRecord {
 public:
  // A new run (no checkpoint), or the run a checkpoint recorded (its ranks
  // must be as many as now: the split of each batch shapes the arithmetic).
  explicit RunRecord(const Checkpoint* resumed = nullptr, const std::string& checkpoint_path = "");
  bool resumed() const { return resumed_; }
  void path(const char* key, std::string& value);  // "" and "-" stay as they are
  void paths(const char* key, std::vector<std::string>& values);
  void value(const char* key, double& value);
  void value(const char* key, bool& value);
  void value(const char* key, std::int64_t& value);
  // A file read whole at the start: recorded with its fingerprint under
  // print_key; on a resumed run an Error unless its bytes are the ones the
  // checkpoint's run read. "" (no file) and "-" (standard input, read later)
  // are left to the caller.
  void file(const char* key, const char* print_key, std::string& path, const std::string& what);
  // Fingerprints found while reading (standard input, the text corpora).
  void set(const char* key, nlohmann::json value) { record_[key] = std::move(value); }
  const nlohmann::json& get(const char* key) const;
  const nlohmann::json& json() const { return record_; }

 private:
  nlohmann::json record_ = nlohmann::json::object();
  bool resumed_ = false;
  std::string checkpoint_;  // for messages
};

}  // namespace zibert
