#include "sqlitedb.h"

#include <stdexcept>
#include <utility>

namespace traindeck {

bool SqliteError::transient() const {
    switch (code_ & 0xff) {
    case SQLITE_FULL:
    case SQLITE_IOERR:
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_NOMEM:
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_PROTOCOL:
        return true;
    default:
        return false;
    }
}

Statement::Statement(sqlite3* db, std::string_view sql) : db_(db) {
    if (sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr) !=
        SQLITE_OK)
        throw SqliteError(std::string("SQL prepare failed: ") + sqlite3_errmsg(db) + " in: " + std::string(sql),
                          sqlite3_extended_errcode(db));
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement::Statement(Statement&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)), stmt_(std::exchange(other.stmt_, nullptr)) {}

Statement& Statement::operator=(Statement&& other) noexcept {
    std::swap(db_, other.db_);
    std::swap(stmt_, other.stmt_);
    return *this;
}

Statement& Statement::bind(int index, int64_t value) {
    sqlite3_bind_int64(stmt_, index, value);
    return *this;
}

Statement& Statement::bind(int index, double value) {
    sqlite3_bind_double(stmt_, index, value);
    return *this;
}

Statement& Statement::bind(int index, std::string_view value) {
    sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
    return *this;
}

Statement& Statement::bind_static(int index, std::string_view value) {
    sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()), SQLITE_STATIC);
    return *this;
}

Statement& Statement::bind_blob_static(int index, const void* data, size_t size) {
    sqlite3_bind_blob(stmt_, index, data, static_cast<int>(size), SQLITE_STATIC);
    return *this;
}

Statement& Statement::bind_null(int index) {
    sqlite3_bind_null(stmt_, index);
    return *this;
}

bool Statement::step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW)
        return true;
    if (rc == SQLITE_DONE)
        return false;
    const std::string message = sqlite3_errmsg(db_);
    const int code = sqlite3_extended_errcode(db_);
    sqlite3_reset(stmt_);
    throw SqliteError("SQL step failed: " + message, code);
}

void Statement::reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
}

int64_t Statement::integer(int column) const { return sqlite3_column_int64(stmt_, column); }
double Statement::real(int column) const { return sqlite3_column_double(stmt_, column); }
bool Statement::is_null(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }

std::string Statement::text(int column) const { return std::string(text_view(column)); }

std::string_view Statement::text_view(int column) const {
    // sqlite3_column_blob for BLOB columns (text would convert), text otherwise; both stay valid until the next step.
    const auto* data = sqlite3_column_type(stmt_, column) == SQLITE_BLOB
                           ? static_cast<const char*>(sqlite3_column_blob(stmt_, column))
                           : reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
    return data ? std::string_view(data, sqlite3_column_bytes(stmt_, column)) : std::string_view();
}

Database::~Database() { sqlite3_close_v2(db_); }

Database::Database(Database&& other) noexcept : db_(std::exchange(other.db_, nullptr)) {}

Database& Database::operator=(Database&& other) noexcept {
    std::swap(db_, other.db_);
    return *this;
}

std::string Database::open(const std::string& path, bool read_only) {
    const int flags = read_only ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    if (sqlite3_open_v2(path.c_str(), &db_, flags | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK)
        return path + ": cannot open the database: " + error();
    sqlite3_busy_timeout(db_, 5000);
    try {
        if (!read_only) {
            exec("PRAGMA journal_mode=WAL");
            // NORMAL in WAL mode: a committed transaction survives a crash of this process; only a power cut
            // may lose the last few, and the job files they came from are re-read from the saved offsets.
            exec("PRAGMA synchronous=NORMAL");
        }
        exec("PRAGMA foreign_keys=ON");
        // The writer's open checks the whole file (once, at start); readers open often (each view, each background
        // read) and a check reads every page — seconds for a large catalog — so they rely on the writer's check
        // and report what a query finds damaged when it finds it.
        if (!read_only) {
            Statement check(db_, "PRAGMA quick_check");
            if (check.step() && check.text(0) != "ok")
                return path + ": the database is damaged (" + check.text(0) + "); move it aside to start afresh";
        }
    } catch (const std::exception& e) {
        return path + ": " + e.what();
    }
    return {};
}

void Database::exec(std::string_view sql) {
    char* message = nullptr;
    if (const int rc = sqlite3_exec(db_, std::string(sql).c_str(), nullptr, nullptr, &message); rc != SQLITE_OK) {
        const std::string text = message ? message : "unknown error";
        sqlite3_free(message);
        throw SqliteError("SQL failed: " + text, sqlite3_extended_errcode(db_) ? sqlite3_extended_errcode(db_) : rc);
    }
}

} // namespace traindeck
