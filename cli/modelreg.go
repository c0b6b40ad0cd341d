package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/aegis-run/aegis/llm"
	"github.com/aegis-run/aegis/modelreg"
)

// modelProbeTimeout bounds asking the model's endpoint for its identity.
const modelProbeTimeout = 30 * time.Second

// llmBaseURL is the model endpoint a run uses: --llm-base-url, else
// $AEGIS_LLM_BASE_URL, else OpenAI's.
func llmBaseURL(o *runOptions) string {
	base := o.baseURL
	if base == "" {
		base = os.Getenv(EnvLLMBaseURL)
	}
	if base == "" {
		base = llm.DefaultBaseURL
	}
	return base
}

// checkModelRegistry enforces --model-registry: it asks the model's
// endpoint what it serves and refuses (a usage error, exit 2) a model the
// registry does not list for that endpoint or whose reported identity or
// digest differs from the registered one. It returns the identity the
// endpoint reported, for the manifest; without --model-registry or without
// a model it checks nothing and returns the zero Identity. It notes in
// o.registryImages whether the registry says the model accepts images.
func checkModelRegistry(ctx context.Context, o *runOptions, model string) (modelreg.Identity, error) {
	if o.modelRegistry == "" || model == "" {
		return modelreg.Identity{}, nil
	}
	reg, err := modelreg.Load(o.modelRegistry)
	if err != nil {
		return modelreg.Identity{}, usageError("--model-registry: %v", err)
	}
	base := llmBaseURL(o)
	if _, ok := reg.Lookup(model, base); !ok {
		_, err := reg.Check(model, base, modelreg.Identity{})
		return modelreg.Identity{}, usageError("--model-registry %s: %v", o.modelRegistry, err)
	}
	key, err := llm.LoadAPIKey(o.keyFile)
	if err != nil {
		return modelreg.Identity{}, usageError("%v", err)
	}
	pctx, cancel := context.WithTimeout(ctx, modelProbeTimeout)
	defer cancel()
	got, err := modelreg.Probe(pctx, modelreg.ProbeConfig{BaseURL: base, Model: model, APIKey: string(key)})
	if err != nil {
		return modelreg.Identity{}, usageError("--model-registry %s: cannot learn the identity of model %q at %s: %v", o.modelRegistry, model, base, err)
	}
	entry, err := reg.Check(model, base, got)
	if err != nil {
		if errors.Is(err, modelreg.ErrRefused) {
			return modelreg.Identity{}, usageError("--model-registry %s: %v", o.modelRegistry, err)
		}
		return modelreg.Identity{}, fmt.Errorf("model registry: %w", err)
	}
	o.registryImages = entry.Images
	return got, nil
}
