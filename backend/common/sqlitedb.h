#pragma once
// A thin RAII layer over sqlite3: a connection and prepared statements with bind/step helpers.
// Shared by the two SQLite owners: the catalog (model/) and the worker's job database (backend/worker).
#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace traindeck {

// What every failed SQLite call throws: the message and SQLite's extended result code.
class SqliteError : public std::runtime_error {
public:
    SqliteError(const std::string& message, int code) : std::runtime_error(message), code_(code) {}
    int code() const { return code_; }
    // The database could not be written now (disk full, I/O error, busy, locked, read-only file, out of memory):
    // the same transaction may succeed later, so its work is kept and retried rather than refused.
    bool transient() const;

private:
    int code_;
};

class Statement {
public:
    Statement() = default;
    Statement(sqlite3* db, std::string_view sql);
    ~Statement();
    Statement(Statement&& other) noexcept;
    Statement& operator=(Statement&& other) noexcept;
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;

    Statement& bind(int index, int64_t value);
    Statement& bind(int index, double value);
    Statement& bind(int index, std::string_view value);
    Statement& bind_null(int index);
    // The caller keeps value alive until the next step() or reset().
    Statement& bind_static(int index, std::string_view value);
    Statement& bind_blob_static(int index, const void* data, size_t size);
    // Returns true while there is a row; throws SqliteError on an error (caught at the thread's edge).
    bool step();
    void reset();
    bool prepared() const { return stmt_ != nullptr; }

    int64_t integer(int column) const;
    double real(int column) const;
    std::string text(int column) const;
    std::string_view text_view(int column) const;
    bool is_null(int column) const;

private:
    sqlite3* db_ = nullptr;
    sqlite3_stmt* stmt_ = nullptr;
};

class Database {
public:
    Database() = default;
    ~Database();
    Database(Database&& other) noexcept;
    Database& operator=(Database&& other) noexcept;
    Database(const Database&) = delete;
    Database& operator=(const Database&) = delete;

    // Opens (creating when `create`) with WAL, a busy timeout and foreign keys. Returns an error message or "".
    std::string open(const std::string& path, bool read_only);
    void exec(std::string_view sql);
    Statement prepare(std::string_view sql) const { return Statement(db_, sql); }
    int64_t last_insert_id() const { return sqlite3_last_insert_rowid(db_); }
    sqlite3* handle() const { return db_; }
    std::string error() const { return db_ ? sqlite3_errmsg(db_) : "not open"; }

private:
    sqlite3* db_ = nullptr;
};

} // namespace traindeck
