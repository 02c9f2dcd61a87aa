// Wrapper main for the Kubernetes resource provider (pulumi-resource-kubernetes).
//
// Upstream's own main (provider/cmd/pulumi-resource-kubernetes/main.go in
// github.com/pulumi/pulumi-kubernetes/provider/v4, tag v4.25.0) embeds two
// files that are generated and gitignored upstream, so they are missing from
// the module zip. scripts/engine-tools generates them from the module cache
// (schema.json with "version" set, terraform-mapping.json compacted) right
// before `go build`; they are never committed (see .gitignore).
package main

import (
	_ "embed"

	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version"
)

//go:embed schema-embed.json
var pulumiSchema []byte

//go:embed terraform-mapping-embed.json
var terraformMapping []byte

func main() {
	provider.Serve("kubernetes", version.Version, pulumiSchema, terraformMapping)
}
