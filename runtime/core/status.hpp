#pragma once
// The runtime's one error idiom: an operation that can fail in a way its caller handles returns
// a `status` (ok, or what failed in words) or an `expected<T>` (a value, or the status saying
// why there is none). No `bool` plus an out-string. Programmer errors still assert; failures a
// user can cause (bad input, a full disk, a damaged file) are statuses.
#include <optional>
#include <string>
#include <utility>

namespace anchorage {

class status {
 public:
  status() = default;  // ok
  static status ok() { return status(); }
  static status failure(std::string what) {
    status s;
    s.error_ = std::move(what);
    s.failed_ = true;
    return s;
  }
  bool is_ok() const { return !failed_; }
  explicit operator bool() const { return !failed_; }
  // What failed (empty when ok).
  const std::string& error() const { return error_; }

 private:
  bool failed_ = false;
  std::string error_;
};

template <class T>
class expected {
 public:
  expected(T value) : value_(std::move(value)) {}             // NOLINT: implicit, as a return value
  expected(status failure) : failure_(std::move(failure)) {}  // NOLINT
  bool has_value() const { return value_.has_value(); }
  explicit operator bool() const { return has_value(); }
  T& value() { return *value_; }
  const T& value() const { return *value_; }
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  // The status: ok when there is a value.
  const status& error() const { return failure_; }

 private:
  std::optional<T> value_;
  status failure_;
};

}  // namespace anchorage
