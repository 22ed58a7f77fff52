#pragma once
// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of TFRecord framing (TensorBoard event files)
// and of LevelDB's log framing (W&B's .wandb files), and its "masked" form both formats store: a CRC of data that
// itself holds CRCs is rotated and offset so it does not look like one. SSE4.2's crc32 instruction where the CPU has it
// (checked at run time), else slice-by-8 tables built at compile time.
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace traindeck::importers {

// crc32c(b, crc32c(a)) == crc32c(a + b): a CRC can be continued over pieces.
uint32_t crc32c(const void* data, size_t size, uint32_t crc = 0);
inline uint32_t crc32c(std::string_view bytes, uint32_t crc = 0) { return crc32c(bytes.data(), bytes.size(), crc); }
// The same CRC from the tables alone, whatever the CPU has (the tests hold both ways to one reference).
uint32_t crc32c_tables(const void* data, size_t size, uint32_t crc = 0);

inline uint32_t mask_crc32c(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }
inline uint32_t masked_crc32c(std::string_view bytes) { return mask_crc32c(crc32c(bytes)); }

} // namespace traindeck::importers
