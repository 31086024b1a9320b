package redisio

import "strings"

// SlotCount is the number of Redis Cluster hash slots.
const SlotCount = 16384

// Slot returns the Redis Cluster hash slot of key: CRC16 (XMODEM) of the
// key, or of its hash tag (the text between the first "{" and the next "}",
// when that is not empty), modulo 16384.
func Slot(key string) int {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			key = key[open+1 : open+1+end]
		}
	}
	return int(crc16(key) % SlotCount)
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0), the checksum
// Redis Cluster uses for key slots.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
