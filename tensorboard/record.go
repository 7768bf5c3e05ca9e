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

// appendRecord appends payload to dst in the TFRecord framing.
func appendRecord(dst, payload []byte) []byte {
	var head [recordHeaderSize]byte
	binary.LittleEndian.PutUint64(head[:8], uint64(len(payload)))
	binary.LittleEndian.PutUint32(head[8:], maskedCRC(head[:8]))
	dst = append(dst, head[:]...)
	dst = append(dst, payload...)
	return binary.LittleEndian.AppendUint32(dst, maskedCRC(payload))
}
