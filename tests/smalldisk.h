#pragma once
// A tmpfs of a given size mounted for the life of the object: the disk a test fills up (mounting needs root; a
// test checks `mounted` and skips, or fails under TRAINDECK_REQUIRE_ALL=1, when it could not).
#include <cstdlib>
#include <filesystem>
#include <string>

namespace traindeck::test {

struct SmallDisk {
    SmallDisk(const std::string& path, const std::string& size) : path(path) {
        std::filesystem::create_directories(path);
        mounted = std::system(("mount -t tmpfs -o size=" + size + " tmpfs '" + path + "' 2>/dev/null").c_str()) == 0;
    }
    ~SmallDisk() {
        if (mounted) {
            [[maybe_unused]] const int unmounted = std::system(("umount -l '" + path + "'").c_str()); // best effort
        }
    }
    SmallDisk(const SmallDisk&) = delete;
    SmallDisk& operator=(const SmallDisk&) = delete;
    std::string path;
    bool mounted = false;
};

} // namespace traindeck::test
