package tensorboard

import (
	"encoding/binary"
	"hash/crc32"
)

// TFRecord framing, as TensorFlow's record writer lays out every record of
// an event file:
//
//	uint64 length (little endian)
//	uint32 masked CRC-32C of the 8 length bytes
//	length bytes of payload (a serialized Event)
//	uint32 masked CRC-32C of the payload

// castagnoli is the CRC-32C table TFRecord checksums use.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// maskDelta is the constant TFRecord adds to a rotated CRC.
const maskDelta = 0xa282ead8

// maskedCRC returns the masked CRC-32C of b: the CRC rotated right by 15
// bits plus maskDelta, so that a CRC of data holding CRCs stays well mixed.
func maskedCRC(b []byte) uint32 {
	c := crc32.Checksum(b, castagnoli)
	return (c>>15 | c<<17) + maskDelta
}

// recordHeaderSize and recordFooterSize are the bytes around a payload.
const (
	recordHeaderSize = 12
	recordFooterSize = 4
)

// appendRecord appends payload to dst in the TFRecord framing. It writes
// the header in place in dst, so that framing allocates nothing once dst
// has room.
func appendRecord(dst, payload []byte) []byte {
	start := len(dst)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(len(payload)))
	dst = binary.LittleEndian.AppendUint32(dst, maskedCRC(dst[start:start+8]))
	dst = append(dst, payload...)
	return binary.LittleEndian.AppendUint32(dst, maskedCRC(payload))
}
