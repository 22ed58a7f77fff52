#pragma once
// Bytes in memory that starts on a 4 KiB boundary, never zero-filled when it grows: a dataset chunk is received
// into one and written to disk from it with O_DIRECT, with no copy and no memset of its 4 MiB on the way.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <mutex>
#include <new>
#include <string_view>
#include <vector>

namespace traindeck {

class AlignedBytes {
public:
    static constexpr std::size_t kAlignment = 4096;

    AlignedBytes() = default;
    explicit AlignedBytes(std::string_view bytes) { append(bytes.data(), bytes.size()); }
    AlignedBytes(const AlignedBytes&) = delete;
    AlignedBytes& operator=(const AlignedBytes&) = delete;
    AlignedBytes(AlignedBytes&& other) noexcept { *this = std::move(other); }
    AlignedBytes& operator=(AlignedBytes&& other) noexcept {
        if (this != &other) {
            release();
            data_ = other.data_, size_ = other.size_, capacity_ = other.capacity_;
            other.data_ = nullptr, other.size_ = other.capacity_ = 0;
        }
        return *this;
    }
    ~AlignedBytes() { release(); }

    char* data() { return data_; }
    const char* data() const { return data_; }
    std::size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    void clear() { size_ = 0; }
    // New bytes are left as they are (uninitialised): the caller writes them.
    void resize(std::size_t size) {
        reserve(size);
        size_ = size;
    }
    void append(const char* bytes, std::size_t size) {
        if (size == 0)
            return;
        if (size_ + size > capacity_)
            reserve(std::max(size_ + size, 2 * capacity_));
        std::memcpy(data_ + size_, bytes, size);
        size_ += size;
    }
    std::string_view view() const { return {data_, size_}; }

private:
    // Buffers of kPooled bytes (a dataset chunk's) are kept for the next one: a fresh 4 MiB is mapped anew by the
    // allocator, and the kernel zeroes each of its pages on first touch, which costs as much as the copy it saves.
    static constexpr std::size_t kPooled = std::size_t(4) << 20;
    static constexpr std::size_t kPoolBuffers = 16;
    struct Pool {
        std::mutex mutex;
        std::vector<char*> free;
    };
    // Never destroyed: a thread still running at exit may give a buffer back after static destructors ran.
    static Pool& pool() {
        static Pool* shared = new Pool;
        return *shared;
    }

    void reserve(std::size_t capacity) {
        if (capacity <= capacity_)
            return;
        // A whole number of alignments (aligned_alloc, under aligned new, refuses other sizes); a chunk's size or
        // less takes a pooled buffer.
        capacity = capacity <= kPooled ? kPooled : (capacity + kAlignment - 1) / kAlignment * kAlignment;
        char* grown = nullptr;
        if (capacity == kPooled) {
            std::lock_guard lock(pool().mutex);
            if (!pool().free.empty())
                grown = pool().free.back(), pool().free.pop_back();
        }
        if (!grown)
            grown = static_cast<char*>(::operator new(capacity, std::align_val_t(kAlignment)));
        if (size_ > 0)
            std::memcpy(grown, data_, size_);
        release();
        data_ = grown, capacity_ = capacity;
    }
    void release() {
        if (data_ && capacity_ == kPooled) {
            std::lock_guard lock(pool().mutex);
            if (pool().free.size() < kPoolBuffers) {
                pool().free.push_back(data_);
                data_ = nullptr;
            }
        }
        if (data_)
            ::operator delete(data_, std::align_val_t(kAlignment));
        data_ = nullptr;
        capacity_ = 0;
    }

    char* data_ = nullptr;
    std::size_t size_ = 0, capacity_ = 0;
};

} // namespace traindeck
