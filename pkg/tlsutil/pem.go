package tlsutil

import "encoding/pem"

// pemOrDER returns the first PEM block of type typ in b, or b itself when
// b is not PEM (DER).
func pemOrDER(b []byte, typ string) []byte {
	rest := b
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return b
		}
		if block.Type == typ {
			return block.Bytes
		}
	}
}
