// ConfigError: the one exception type for bad user input (scenario files, settings,
// command-line paths). It carries file, line, column and the key so the CLI can print
// exactly one line `FILE:LINE:COL: KEY: MESSAGE` and exit 2 before anything is spawned.
#pragma once

#include <stdexcept>
#include <string>

namespace hanglab {

class ConfigError : public std::runtime_error {
 public:
  ConfigError(std::string file, int line, int col, std::string key, const std::string& msg)
      : std::runtime_error(format(file, line, col, key, msg)),
        file_(std::move(file)),
        line_(line),
        col_(col),
        key_(std::move(key)) {}

  const std::string& file() const { return file_; }
  int line() const { return line_; }
  int col() const { return col_; }
  const std::string& key() const { return key_; }

 private:
  static std::string format(const std::string& file, int line, int col, const std::string& key,
                            const std::string& msg) {
    std::string s = file + ":" + std::to_string(line) + ":" + std::to_string(col) + ": ";
    if (!key.empty()) s += key + ": ";
    return s + msg;
  }
  std::string file_;
  int line_;
  int col_;
  std::string key_;
};

}  // namespace hanglab
