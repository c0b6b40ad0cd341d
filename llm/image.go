package llm

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"

	"github.com/aegis-run/aegis/contract"
)

// Images: a message may show the model images (a vision escalation: a
// screenshot of the page, masked before it was stored). The client sends
// such a message as OpenAI-compatible content parts, its text first, then
// one image_url part per image with a data: URL; the prompt hash covers
// each image by its SHA-256, never its bytes (PromptHash); the model-call
// record lists each image by its bundle path and SHA-256
// (contract.ModelImage). The secret guard (Config.Guard) sees the whole
// request body, text and base64 alike; what protects an image's pixels is
// upstream: the driver masks sensitive fields before the screenshot is
// taken, and the evidence writer refuses an image holding a secret value,
// so only a stored image is ever shown.

// ImageTokens is what the token budget counts for one image before the
// endpoint reports the call's usage: a fixed estimate, since what an image
// costs depends on the model (OpenAI's high-detail rate for a 1280×720
// screenshot is 85 + 170 × 6 tiles = 1,105 tokens; a LLaVA-style model
// charges a fixed 576). The endpoint's reported usage is what is charged.
const ImageTokens = 1105

// Image is one image a message shows the model. Make it with NewImage,
// which computes its SHA-256 once.
type Image struct {
	// URI is where the image is in the evidence bundle (the uri of its
	// ImageArtifact record), for the model-call record.
	URI string
	// MIMEType is the image's type: image/png, image/jpeg or image/webp.
	MIMEType string
	// Data is the image's bytes, exactly as stored.
	Data []byte

	sum string
}

// NewImage returns the image of data (of type mime, stored at uri) with
// its SHA-256 computed.
func NewImage(uri, mime string, data []byte) Image {
	return Image{URI: uri, MIMEType: mime, Data: data, sum: sha256Hex(data)}
}

// SHA256 returns the SHA-256 of the image's bytes, in lowercase hex.
func (im Image) SHA256() string {
	if im.sum == "" {
		return sha256Hex(im.Data)
	}
	return im.sum
}

// DataURL returns the image as a data: URL (data:MIME;base64,...), the
// form of an OpenAI image_url part.
func (im Image) DataURL() string {
	return "data:" + im.MIMEType + ";base64," + base64.StdEncoding.EncodeToString(im.Data)
}

// ModelImage returns the image as a model-call record lists it.
func (im Image) ModelImage() contract.ModelImage {
	return contract.ModelImage{URI: im.URI, SHA256: im.SHA256()}
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// imagesOf returns the images msgs show, in order, as the record lists
// them; nil when none.
func imagesOf(msgs []Message) []contract.ModelImage {
	var out []contract.ModelImage
	for _, m := range msgs {
		for _, im := range m.Images {
			out = append(out, im.ModelImage())
		}
	}
	return out
}

// countImages is how many images msgs show.
func countImages(msgs []Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Images)
	}
	return n
}
