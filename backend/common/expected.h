#pragma once
// Errors are values at the boundaries of the plain C++ rooms (engine, dataset, worker): every function that can fail
// on outside input returns Expected<T>, whose error says what was wrong and what to do about it.
#include <string>
#include <utility>
#include <variant>

namespace traindeck {

struct Error {
    std::string message;
};

template <typename T>
class Expected {
public:
    Expected(T value) : state_(std::move(value)) {}
    Expected(Error error) : state_(std::move(error)) {}

    explicit operator bool() const { return std::holds_alternative<T>(state_); }
    T& operator*() { return std::get<T>(state_); }
    const T& operator*() const { return std::get<T>(state_); }
    T* operator->() { return &std::get<T>(state_); }
    const T* operator->() const { return &std::get<T>(state_); }
    const std::string& error() const { return std::get<Error>(state_).message; }

private:
    std::variant<T, Error> state_;
};

struct Ok {};
using Status = Expected<Ok>;

} // namespace traindeck
