package cli

import (
	"errors"
	"testing"
)

// TestModelImages: whether the model is shown images: --vision without a
// registry, the registry's "images" with one (--vision against it is a
// usage error), never for the offline agents (no model).
func TestModelImages(t *testing.T) {
	tests := []struct {
		name    string
		o       runOptions
		model   string
		want    bool
		wantErr bool
	}{
		{"offline", runOptions{}, "", false, false},
		{"offline with --vision", runOptions{vision: true}, "", false, true},
		{"model", runOptions{}, "m", false, false},
		{"model with --vision", runOptions{vision: true}, "m", true, false},
		{"registry says images", runOptions{modelRegistry: "r.json", registryImages: true}, "m", true, false},
		{"registry says images, --vision", runOptions{modelRegistry: "r.json", registryImages: true, vision: true}, "m", true, false},
		{"registry says none", runOptions{modelRegistry: "r.json"}, "m", false, false},
		{"registry says none, --vision", runOptions{modelRegistry: "r.json", vision: true}, "m", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := modelImages(&tt.o, tt.model)
			var ee *exitError
			if got != tt.want || (err != nil) != tt.wantErr || (err != nil && (!errors.As(err, &ee) || ee.code != ExitUsage)) {
				t.Errorf("modelImages = %v, %v; want %v, error %v (a usage error)", got, err, tt.want, tt.wantErr)
			}
		})
	}
}
