package evidence

import (
	"bytes"
	"encoding/binary"

	"github.com/aegis-run/aegis/contract"
)

// imageInfo is what the bytes of an image say about it.
type imageInfo struct {
	mime          string
	width, height int // 0 when the header does not say
}

// sniffImage recognizes a PNG, JPEG or WebP image from its bytes (never
// from a name or a claimed type) and reads its dimensions where the header
// gives them. ok is false for anything else.
func sniffImage(b []byte) (imageInfo, bool) {
	switch {
	case len(b) >= 24 && bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		// The first chunk must be IHDR, 13 bytes long.
		if binary.BigEndian.Uint32(b[8:]) != 13 || string(b[12:16]) != "IHDR" || len(b) < 33 {
			return imageInfo{}, false
		}
		return dims(contract.MIMEPNG, int(binary.BigEndian.Uint32(b[16:])), int(binary.BigEndian.Uint32(b[20:]))), true
	case len(b) >= 4 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF:
		return jpegInfo(b), true
	case len(b) >= 16 && string(b[0:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		if int(binary.LittleEndian.Uint32(b[4:])) != len(b)-8 {
			return imageInfo{}, false // the RIFF size must cover exactly the file
		}
		switch string(b[12:16]) {
		case "VP8 ":
			// Frame tag (3 bytes), start code 9d 01 2a, then 14-bit sizes.
			if len(b) >= 30 && b[23] == 0x9d && b[24] == 0x01 && b[25] == 0x2a {
				return dims(contract.MIMEWebP, int(binary.LittleEndian.Uint16(b[26:])&0x3fff), int(binary.LittleEndian.Uint16(b[28:])&0x3fff)), true
			}
		case "VP8L":
			if len(b) >= 25 && b[20] == 0x2f {
				v := binary.LittleEndian.Uint32(b[21:])
				return dims(contract.MIMEWebP, int(v&0x3fff)+1, int(v>>14&0x3fff)+1), true
			}
		case "VP8X":
			if len(b) >= 30 {
				w := int(b[24]) | int(b[25])<<8 | int(b[26])<<16
				h := int(b[27]) | int(b[28])<<8 | int(b[29])<<16
				return dims(contract.MIMEWebP, w+1, h+1), true
			}
		default:
			return imageInfo{}, false
		}
		return imageInfo{mime: contract.MIMEWebP}, true
	}
	return imageInfo{}, false
}

// dims keeps dimensions the image-artifact schema can hold (1 to 65535).
func dims(mime string, w, h int) imageInfo {
	if w < 1 || w > 65535 || h < 1 || h > 65535 {
		return imageInfo{mime: mime}
	}
	return imageInfo{mime: mime, width: w, height: h}
}

// jpegInfo walks the JPEG markers to the first start-of-frame.
func jpegInfo(b []byte) imageInfo {
	i := 2
	for i+4 <= len(b) {
		if b[i] != 0xFF {
			break
		}
		m := b[i+1]
		if m == 0xFF { // fill byte
			i++
			continue
		}
		if m == 0xD8 || m == 0x01 || 0xD0 <= m && m <= 0xD7 { // no length
			i += 2
			continue
		}
		n := int(binary.BigEndian.Uint16(b[i+2:]))
		if n < 2 {
			break
		}
		isSOF := 0xC0 <= m && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC
		if isSOF && i+9 <= len(b) {
			h := int(binary.BigEndian.Uint16(b[i+5:]))
			w := int(binary.BigEndian.Uint16(b[i+7:]))
			return dims(contract.MIMEJPEG, w, h)
		}
		if m == 0xDA { // start of scan: no frame header before it
			break
		}
		i += 2 + n
	}
	return imageInfo{mime: contract.MIMEJPEG}
}
