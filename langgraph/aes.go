package langgraph

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/subtle"
	"errors"
	"fmt"
)

// LangGraph's EncryptedSerializer (langgraph.checkpoint.serde.encrypted,
// from_pycryptodome_aes) stores a value's serde type with "+aes" appended
// and its bytes as nonce (16) + tag (16) + AES-EAX ciphertext, under the key
// in LANGGRAPH_AES_KEY (16, 24 or 32 bytes, taken as they are). An import
// decrypts them with the same key: the values it stores are the serde's
// plain bytes, which every agentstate saver reads.

// ErrNoKey is an EncryptedSerializer source imported without its key.
var ErrNoKey = errors.New("langgraph: encrypted values and no key (LANGGRAPH_AES_KEY)")

// EncryptionKeyEnv is the environment variable LangGraph reads the AES key
// from, and so does the agentstate command.
const EncryptionKeyEnv = "LANGGRAPH_AES_KEY"

func decrypt(typ, cipherName string, data, key []byte) ([]byte, error) {
	if cipherName != "aes" {
		return nil, fmt.Errorf("serde type %q: cipher %q is not the one EncryptedSerializer.from_pycryptodome_aes writes (aes)", typ+"+"+cipherName, cipherName)
	}
	if len(key) == 0 {
		return nil, fmt.Errorf("%w: serde type %q is encrypted by LangGraph's EncryptedSerializer; set %s to the key the source was written with", ErrNoKey, typ+"+aes", EncryptionKeyEnv)
	}
	plain, err := eaxOpen(key, data)
	if err != nil {
		return nil, fmt.Errorf("serde type %q: %w", typ+"+aes", err)
	}
	return plain, nil
}

// eaxOpen decrypts and authenticates nonce(16) + tag(16) + ciphertext,
// AES in EAX mode with an empty header (Bellare, Rogaway, Wagner), as
// pycryptodome's AES.MODE_EAX does.
func eaxOpen(key, data []byte) ([]byte, error) {
	switch len(key) {
	case 16, 24, 32:
	default:
		return nil, fmt.Errorf("%s is %d bytes; AES keys are 16, 24 or 32", EncryptionKeyEnv, len(key))
	}
	if len(data) < 32 {
		return nil, fmt.Errorf("%d bytes, shorter than a nonce and a tag", len(data))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	nonce, tag, ct := data[:16], data[16:32], data[32:]
	n := omac(block, 0, nonce)
	h := omac(block, 1, nil)
	c := omac(block, 2, ct)
	var want [16]byte
	for i := range want {
		want[i] = n[i] ^ h[i] ^ c[i]
	}
	if subtle.ConstantTimeCompare(want[:], tag) != 1 {
		return nil, errors.New("the tag does not verify: a wrong key, or damaged bytes")
	}
	out := make([]byte, len(ct))
	cipher.NewCTR(block, n[:]).XORKeyStream(out, ct)
	return out, nil
}

// omac is OMAC1 (CMAC) of [t]_16 || msg.
func omac(block cipher.Block, t byte, msg []byte) [16]byte {
	var l, k1, k2 [16]byte
	block.Encrypt(l[:], l[:])
	double := func(dst, src *[16]byte) {
		carry := src[0] >> 7
		for i := range 15 {
			dst[i] = src[i]<<1 | src[i+1]>>7
		}
		dst[15] = src[15] << 1
		if carry != 0 {
			dst[15] ^= 0x87
		}
	}
	double(&k1, &l)
	double(&k2, &k1)
	full := make([]byte, 16+len(msg))
	full[15] = t
	copy(full[16:], msg)
	var x [16]byte
	for len(full) > 16 {
		for i := range 16 {
			x[i] ^= full[i]
		}
		block.Encrypt(x[:], x[:])
		full = full[16:]
	}
	// The last block: whole (xor K1) or padded (xor K2).
	var last [16]byte
	if len(full) == 16 {
		copy(last[:], full)
		for i := range 16 {
			last[i] ^= k1[i]
		}
	} else {
		copy(last[:], full)
		last[len(full)] = 0x80
		for i := range 16 {
			last[i] ^= k2[i]
		}
	}
	for i := range 16 {
		x[i] ^= last[i]
	}
	block.Encrypt(x[:], x[:])
	return x
}
