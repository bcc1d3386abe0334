package codec

import "encoding/hex"

// UUIDText formats 16 bytes as the 36-character text form of a UUID
// (8-4-4-4-12 lowercase hex digits), the form message and checkpoint ids take.
func UUIDText(b [16]byte) string {
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:36], b[10:16])
	return string(s[:])
}
