// Command pulumi-language-yaml is the YAML language host of pulumi-yaml v1.25.0
// (github.com/pulumi/pulumi-yaml/pkg/server) with the two things `pulumi package
// add` needs of it that v1.25.0 (the newest version the Go module proxy here
// serves) lacks: the Link RPC, and package schemas loaded through the engine.
//
// `pulumi package add` (pulumi v3.274.1) ends by calling the project language's
// Link for the SDK it generated (pkg/cmd/pulumi/packageworkspace/packageworkspace.go,
// LinkIntoProject; no exception for YAML), and pulumi-yaml v1.25.0 (the newest
// version the Go module proxy here serves) does not implement it, so the command
// failed with "linking package: method Link not implemented" after the SDK was
// written and before Pulumi.yaml was updated. Later pulumi-yaml implements Link
// as a no-op: a YAML program needs nothing linked, the engine only needs to know
// that the language did what it had to (pulumi/pulumi-yaml pkg/server/server.go,
// `func (host *yamlLanguageHost) Link`). This wrapper answers the same.
//
// Schemas: with useRPCLoader false (what v1.25.0's own main passes), Run loads
// each package in the host's process with the plugin lookup of the pulumi SDK
// it was built with (v3.206.0), which does not find a package that `package add`
// cloned from git into the plugin cache (a subfolder of the repository):
// "no resource plugin 'pulumi-resource-gpu-fabric' found in the workspace at
// version v0.1.0 ... from git://...", while the engine (v3.274.1) had just found
// it there. With true, Run asks the engine's loader (RunRequest.LoaderTarget),
// as later pulumi-yaml always does (pkg/server/server.go, Run: NewLoaderClient(
// req.LoaderTarget)); the engine resolves `packages:`, `plugins.providers` and
// the plugin cache itself. Every other RPC is pulumi-yaml's own, unchanged.
//
// The start-up is modelled on (read, not copied) pulumi-yaml v1.25.0
// cmd/pulumi-language-yaml/main.go: the same flags, the engine address as the
// only positional argument, a health check against the engine, the port printed
// on stdout.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/pulumi/pulumi-yaml/pkg/server"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/cmdutil"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/logging"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
)

// linkingHost is pulumi-yaml's host plus Link.
type linkingHost struct {
	pulumirpc.LanguageRuntimeServer
}

// Link has nothing to do for YAML: the program names its packages in Pulumi.yaml
// (`packages:`, which `pulumi package add` writes) and the engine loads their
// schemas itself.
func (linkingHost) Link(context.Context, *pulumirpc.LinkRequest) (*pulumirpc.LinkResponse, error) {
	return &pulumirpc.LinkResponse{}, nil
}

func main() {
	var tracing string
	flag.StringVar(&tracing, "tracing", "", "Zipkin-compatible tracing endpoint")
	// Accepted for command-line compatibility with pulumi-yaml's host; unused there too.
	flag.String("root", "", "[obsolete] root of the program execution")
	flag.String("compiler", "", "[obsolete] compiler to pre-process YAML")
	flag.Parse()
	logging.InitLogging(false, 0, false)
	cmdutil.InitTracing("pulumi-language-yaml", "pulumi-language-yaml", tracing)

	var engineAddress string
	var cancel chan bool
	if args := flag.Args(); len(args) > 0 {
		engineAddress = args[0]
		var err error
		if cancel, err = watchEngine(engineAddress); err != nil {
			cmdutil.Exit(fmt.Errorf("could not start health check host RPC server: %w", err))
		}
	}

	handle, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Cancel: cancel,
		Init: func(srv *grpc.Server) error {
			host := server.NewLanguageHost(engineAddress, tracing, true /* useRPCLoader: see above */)
			pulumirpc.RegisterLanguageRuntimeServer(srv, linkingHost{host})
			return nil
		},
	})
	if err != nil {
		cmdutil.Exit(fmt.Errorf("could not start language host RPC server: %w", err))
	}
	fmt.Printf("%d\n", handle.Port)
	if err := <-handle.Done; err != nil {
		cmdutil.Exit(fmt.Errorf("language host RPC stopped serving: %w", err))
	}
}

// watchEngine returns a channel closed when the engine stops answering its
// health check or the host gets SIGINT: the server then stops.
func watchEngine(engineAddress string) (chan bool, error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	done := make(chan bool)
	go func() {
		<-ctx.Done()
		stop()
		close(done)
	}()
	if err := rpcutil.Healthcheck(ctx, engineAddress, 5*time.Minute, stop); err != nil {
		return nil, err
	}
	return done, nil
}
