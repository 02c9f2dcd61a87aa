// Command pulumi-language-python is gpu-fabric's own minimal Python language
// host for the Pulumi engine (v3.274.1).  Upstream's host
// (github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3) is a
// nested, never-tagged module that the Go module proxy here does not serve, so
// this is an independent implementation of the LanguageRuntime gRPC service
// covering what the engine needs to run Python programs and Python policy
// packs offline.  It deliberately does not create virtual environments or
// install anything.
//
// Behaviour is modelled on (read, not copied):
//   - upstream sdk/python/cmd/pulumi-language-python/main.go (pulumi/pulumi,
//     indexed copy of 2025-era main.go, ~52 KB): main() exec-shim lookup next
//     to os.Executable(), engine health check, port printed on stdout;
//     Run/constructArguments/constructConfig/constructConfigSecretKeys (shim
//     arguments, PULUMI_CONFIG and PULUMI_CONFIG_SECRET_KEYS, exit code 32 =>
//     Bail, error strings); RunPlugin ("python <dir> args...", cwd = req.Pwd,
//     env = req.Env, exit code streamed back); GetRequiredPackages /
//     determinePackageDependency / determinePluginVersion (pulumi-plugin.json,
//     packages without plugins, "v" prefix); GetRequiredPlugins =>
//     Unimplemented.
//   - sdk/v3@v3.274.1 python/cmd/pulumi-language-python-exec: the flags the
//     shim accepts (--monitor --engine --project --root_directory --stack
//     --parallel --dry_run --pwd --tracing --organization PROGRAM ARGS...).
//   - sdk/v3@v3.274.1 python/lib/pulumi/policy/__main__.py: positional
//     arguments engineAddress program.
//   - sdk/v3@v3.274.1 go/common/resource/plugin/plugin.go:517-590 (directory
//     plugins are started through RunPlugin with Kind and Args) and
//     analyzer_plugin.go:201-208 (a policy pack gets Args=[engine address]);
//     langruntime_plugin.go:208-212 (the host's only positional argument is
//     the engine address) and :222-260 (GetRequiredPackages first,
//     GetRequiredPlugins only if that is Unimplemented).
//   - sdk/v3@v3.274.1 python/toolchain/pip.go:328-372 (PULUMI_PYTHON_CMD, then
//     python3, then python) and toolchain.go:180-211 (venv activation).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/cmdutil"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	"github.com/pulumi/pulumi/sdk/v3/go/common/version"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
)

const (
	execShimName = "pulumi-language-python-exec"
	// The shim exits with this code after it has already reported the error
	// to the engine; the host must then ask the engine to bail quietly.
	exitCodeUserActionable = 32
)

func main() {
	var tracing, givenExecutor string
	flag.StringVar(&tracing, "tracing", "", "Zipkin-compatible tracing endpoint, passed on to the program")
	flag.StringVar(&givenExecutor, "use-executor", "", "use this exec shim instead of the one next to the host")
	// Accepted for command-line compatibility with upstream; unused.
	flag.String("virtualenv", "", "[obsolete]")
	flag.String("root", "", "[obsolete]")
	flag.String("typechecker", "", "[obsolete]")
	flag.String("toolchain", "pip", "[obsolete]")
	flag.Parse()

	shim := givenExecutor
	if shim == "" {
		self, err := os.Executable()
		if err != nil {
			cmdutil.Exit(fmt.Errorf("could not determine current executable: %w", err))
		}
		shim = filepath.Join(filepath.Dir(self), execShimName)
		if _, err := os.Stat(shim); err != nil {
			cmdutil.Exit(fmt.Errorf("missing executor %s: %w", shim, err))
		}
	}

	var engineAddress string
	if args := flag.Args(); len(args) > 0 {
		engineAddress = args[0]
	}

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	stop := make(chan bool)
	go func() {
		<-ctx.Done()
		cancel()
		close(stop)
	}()

	// Exit when the engine goes away, as plugins do.
	if engineAddress != "" {
		if err := rpcutil.Healthcheck(ctx, engineAddress, 5*time.Minute, cancel); err != nil {
			cmdutil.Exit(fmt.Errorf("could not start health check host RPC server: %w", err))
		}
	}

	host := &pythonHost{shim: shim, engineAddress: engineAddress, tracing: tracing}
	handle, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Cancel: stop,
		Init: func(srv *grpc.Server) error {
			pulumirpc.RegisterLanguageRuntimeServer(srv, host)
			return nil
		},
	})
	if err != nil {
		cmdutil.Exit(fmt.Errorf("could not start language host RPC server: %w", err))
	}
	// The engine reads the port from the first line of stdout.
	fmt.Printf("%d\n", handle.Port)
	if err := <-handle.Done; err != nil {
		cmdutil.Exit(fmt.Errorf("language host RPC stopped serving: %w", err))
	}
}

type pythonHost struct {
	pulumirpc.UnimplementedLanguageRuntimeServer

	shim    string
	tracing string

	mu            sync.Mutex
	engineAddress string
}

func (h *pythonHost) engine() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.engineAddress
}

// Handshake is only used by the engine when it attaches to an already
// running host (PULUMI_DEBUG_LANGUAGES); a spawned host gets the engine
// address as its positional argument.
func (h *pythonHost) Handshake(
	ctx context.Context, req *pulumirpc.LanguageHandshakeRequest,
) (*pulumirpc.LanguageHandshakeResponse, error) {
	h.mu.Lock()
	h.engineAddress = req.GetEngineAddress()
	h.mu.Unlock()
	return &pulumirpc.LanguageHandshakeResponse{}, nil
}

func (h *pythonHost) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: version.Version}, nil
}

func (h *pythonHost) Cancel(context.Context, *emptypb.Empty) (*emptypb.Empty, error) {
	return &emptypb.Empty{}, nil
}

// --- interpreter selection ------------------------------------------------

// python is the interpreter to run plus the environment to run it with.
type python struct {
	exe  string
	venv string // non-empty when exe belongs to a virtual environment
}

func optionsOf(info *pulumirpc.ProgramInfo) map[string]any {
	if info == nil || info.GetOptions() == nil {
		return map[string]any{}
	}
	return info.GetOptions().AsMap()
}

func isVenv(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, "bin", "python"))
	return err == nil && !st.IsDir()
}

// resolvePython picks the interpreter for a program or plugin.
//
//   - runtime option `virtualenv` (relative to the root directory): that venv,
//     which must already exist; nothing is ever created or installed;
//   - toolchain `uv` without `virtualenv`: <root>/.venv if it exists;
//   - otherwise PULUMI_PYTHON_CMD (looked up on PATH, may be absolute), else
//     python3, else python.
//
// defaultVenv is used for plugins: upstream forces virtualenv "venv" for
// plugin directories; we use <root>/venv only when it is a venv and fall back
// to the interpreter above otherwise, so a policy pack can share the test
// venv named by PULUMI_PYTHON_CMD.
func resolvePython(info *pulumirpc.ProgramInfo, defaultVenv string) (python, error) {
	opts := optionsOf(info)
	root := ""
	if info != nil {
		root = info.GetRootDirectory()
	}
	venv := ""
	if v, ok := opts["virtualenv"]; ok {
		s, ok := v.(string)
		if !ok {
			return python{}, errors.New("virtualenv option must be a string")
		}
		venv = s
	}
	if tc, ok := opts["toolchain"]; ok {
		s, _ := tc.(string)
		switch s {
		case "pip", "":
		case "uv":
			if venv == "" && isVenv(filepath.Join(root, ".venv")) {
				venv = ".venv"
			}
		default:
			return python{}, fmt.Errorf("toolchain %q is not supported by gpu-fabric's minimal Python language host "+
				"(use pip or uv with an existing virtualenv, or PULUMI_PYTHON_CMD)", s)
		}
	}
	if venv != "" {
		dir := venv
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(root, dir)
		}
		if !isVenv(dir) {
			return python{}, fmt.Errorf("The 'virtualenv' option in Pulumi.yaml is set to %q, but %q does not "+
				"appear to be a virtual environment; this host does not create one, create it first", venv, dir)
		}
		return python{exe: filepath.Join(dir, "bin", "python"), venv: dir}, nil
	}
	if defaultVenv != "" {
		dir := filepath.Join(root, defaultVenv)
		if isVenv(dir) {
			return python{exe: filepath.Join(dir, "bin", "python"), venv: dir}, nil
		}
	}
	candidates := []string{"python3", "python"}
	if c := os.Getenv("PULUMI_PYTHON_CMD"); c != "" {
		candidates = []string{c}
	}
	for _, c := range candidates {
		if p, err := exec.LookPath(c); err == nil {
			return python{exe: p}, nil
		}
	}
	return python{}, fmt.Errorf("failed to locate any of %v on your PATH. Have you installed Python 3.x?", candidates)
}

// environ returns base with the venv (if any) activated: its bin dir first on
// PATH, VIRTUAL_ENV set, PYTHONHOME dropped.
func (p python) environ(base []string) []string {
	if p.venv == "" {
		return base
	}
	out := make([]string, 0, len(base)+2)
	bin := filepath.Join(p.venv, "bin")
	sawPath := false
	for _, kv := range base {
		k, v, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(k) {
		case "PATH":
			sawPath = true
			out = append(out, k+"="+bin+string(os.PathListSeparator)+v)
		case "PYTHONHOME", "VIRTUAL_ENV":
		default:
			out = append(out, kv)
		}
	}
	if !sawPath {
		out = append(out, "PATH="+bin)
	}
	return append(out, "VIRTUAL_ENV="+p.venv)
}

// --- installed packages (no pip) -------------------------------------------

// listScript enumerates installed distributions with importlib.metadata
// (standard library, so the venv needs no pip) and finds each one's
// <module>/pulumi-plugin.json.  argv[1] == "direct" drops distributions that
// another installed distribution requires (like `pip list --not-required`).
const listScript = `
import importlib.metadata as md, json, os, re, sys
dists = {}
for d in md.distributions():
    name = (d.metadata.get("Name") or "").strip()
    if not name:
        continue
    key = re.sub(r"[-_.]+", "-", name).lower()
    if key in dists:
        continue
    plugin = ""
    for mod in {name.replace("-", "_"), name.replace("-", "_").lower()}:
        p = str(d.locate_file(os.path.join(mod, "pulumi-plugin.json")))
        if os.path.isfile(p):
            plugin = p
            break
    req = []
    for r in d.requires or []:
        if "extra ==" in r:
            continue
        m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", r)
        if m:
            req.append(re.sub(r"[-_.]+", "-", m.group(1)).lower())
    dists[key] = {"name": name, "version": d.version, "plugin": plugin, "requires": req}
if len(sys.argv) > 1 and sys.argv[1] == "direct":
    needed = {r for v in dists.values() for r in v["requires"]}
    dists = {k: v for k, v in dists.items() if k not in needed}
json.dump(sorted(dists.values(), key=lambda v: v["name"].lower()), sys.stdout)
`

type installedDist struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Plugin  string `json:"plugin"`
}

func listInstalled(ctx context.Context, py python, dir string, directOnly bool) ([]installedDist, error) {
	args := []string{"-c", listScript}
	if directOnly {
		args = append(args, "direct")
	}
	cmd := exec.CommandContext(ctx, py.exe, args...)
	cmd.Dir = dir
	cmd.Env = py.environ(os.Environ())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("listing installed Python packages with %s: %w: %s", py.exe, err, stderr.String())
	}
	var dists []installedDist
	if err := json.Unmarshal(out, &dists); err != nil {
		return nil, fmt.Errorf("parsing installed package list: %w", err)
	}
	return dists, nil
}

// Distributions that look like Pulumi packages but ship no plugin (upstream
// keeps the same list).
var withoutPlugin = map[string]bool{
	"pulumi-policy": true, "pulumi_policy": true, "pulumi-esc-sdk": true, "pulumi_esc_sdk": true,
}

// GetRequiredPackages reports a resource plugin for every installed Pulumi
// package, as upstream does, so the engine can check up front that e.g.
// `resource kubernetes v4.25.0` is available (from PATH, the project's
// `plugins:` section or the plugin cache; automatic acquisition is expected
// to be disabled).  Unlike upstream it reads the packages with
// importlib.metadata instead of `python -m pip list`.
func (h *pythonHost) GetRequiredPackages(
	ctx context.Context, req *pulumirpc.GetRequiredPackagesRequest,
) (*pulumirpc.GetRequiredPackagesResponse, error) {
	py, err := resolvePython(req.GetInfo(), "")
	if err != nil {
		return nil, err
	}
	dists, err := listInstalled(ctx, py, req.GetInfo().GetProgramDirectory(), false)
	if err != nil {
		return nil, err
	}
	resp := &pulumirpc.GetRequiredPackagesResponse{}
	for _, d := range dists {
		if withoutPlugin[d.Name] {
			continue
		}
		var meta *plugin.PulumiPluginJSON
		if d.Plugin != "" {
			if meta, err = plugin.LoadPulumiPluginJSON(d.Plugin); err != nil {
				return nil, fmt.Errorf("reading %s: %w", d.Plugin, err)
			}
		}
		lower := strings.ToLower(d.Name)
		if meta == nil && !strings.HasPrefix(lower, "pulumi-") && !strings.HasPrefix(lower, "pulumi_") {
			continue
		}
		name, ver, server := "", "", ""
		var param *pulumirpc.PackageParameterization
		if meta != nil {
			if !meta.Resource {
				continue
			}
			name, ver, server = meta.Name, meta.Version, meta.Server
			if p := meta.Parameterization; p != nil {
				param = &pulumirpc.PackageParameterization{Name: p.Name, Version: p.Version, Value: p.Value}
			}
		}
		if name == "" {
			name = strings.TrimPrefix(strings.TrimPrefix(lower, "pulumi-"), "pulumi_")
		}
		if ver == "" {
			if ver, err = pluginVersion(d.Version); err != nil {
				continue // as upstream: a version we cannot translate is skipped
			}
		}
		if !strings.HasPrefix(ver, "v") {
			ver = "v" + ver
		}
		resp.Packages = append(resp.Packages, &pulumirpc.PackageDependency{
			Name: name, Kind: "resource", Version: ver, Server: server, Parameterization: param,
		})
	}
	return resp, nil
}

// pluginVersion turns a plain PEP 440 release ("4.25", "4.25.0",
// "4.25.0.post1") into a semver plugin version; pre-releases are refused,
// because the plugin's build suffix cannot be derived from them.
func pluginVersion(v string) (string, error) {
	base, post, _ := strings.Cut(v, ".post")
	parts := strings.Split(base, ".")
	for _, p := range parts {
		if _, err := strconv.Atoi(p); err != nil {
			return "", fmt.Errorf("unsupported package version %q", v)
		}
	}
	for len(parts) < 3 {
		parts = append(parts, "0")
	}
	out := strings.Join(parts, ".")
	if post != "" {
		if _, err := strconv.Atoi(post); err != nil {
			return "", fmt.Errorf("unsupported package version %q", v)
		}
		out += "+post" + post
	}
	return out, nil
}

// GetRequiredPlugins is superseded by GetRequiredPackages (upstream returns
// Unimplemented as well).
func (h *pythonHost) GetRequiredPlugins(
	context.Context, *pulumirpc.GetRequiredPluginsRequest,
) (*pulumirpc.GetRequiredPluginsResponse, error) {
	return nil, status.Error(codes.Unimplemented, "method GetRequiredPlugins not implemented")
}

func (h *pythonHost) GetProgramDependencies(
	ctx context.Context, req *pulumirpc.GetProgramDependenciesRequest,
) (*pulumirpc.GetProgramDependenciesResponse, error) {
	py, err := resolvePython(req.GetInfo(), "")
	if err != nil {
		return nil, err
	}
	dists, err := listInstalled(ctx, py, req.GetInfo().GetProgramDirectory(), !req.GetTransitiveDependencies())
	if err != nil {
		return nil, fmt.Errorf("failed to get python dependencies: %w", err)
	}
	resp := &pulumirpc.GetProgramDependenciesResponse{}
	for _, d := range dists {
		resp.Dependencies = append(resp.Dependencies, &pulumirpc.DependencyInfo{Name: d.Name, Version: d.Version})
	}
	return resp, nil
}

func (h *pythonHost) About(ctx context.Context, req *pulumirpc.AboutRequest) (*pulumirpc.AboutResponse, error) {
	py, err := resolvePython(req.GetInfo(), "")
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, py.exe, "--version")
	cmd.Env = py.environ(os.Environ())
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("running %s --version: %w", py.exe, err)
	}
	return &pulumirpc.AboutResponse{
		Executable: py.exe,
		Version:    strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(out)), "Python ")),
	}, nil
}

// InstallDependencies never fetches anything: the test environment provides
// a ready interpreter (PULUMI_PYTHON_CMD or an existing virtualenv).
func (h *pythonHost) InstallDependencies(
	req *pulumirpc.InstallDependenciesRequest, server pulumirpc.LanguageRuntime_InstallDependenciesServer,
) error {
	closer, stdout, _, err := rpcutil.MakeInstallDependenciesStreams(server, false)
	if err != nil {
		return err
	}
	defer closer.Close()
	py, err := resolvePython(req.GetInfo(), "")
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "gpu-fabric Python language host: not installing dependencies; using %s as it is\n", py.exe)
	return closer.Close()
}

func (h *pythonHost) RuntimeOptionsPrompts(
	context.Context, *pulumirpc.RuntimeOptionsRequest,
) (*pulumirpc.RuntimeOptionsResponse, error) {
	return &pulumirpc.RuntimeOptionsResponse{}, nil
}

// --- Run ------------------------------------------------------------------

func (h *pythonHost) Run(ctx context.Context, req *pulumirpc.RunRequest) (*pulumirpc.RunResponse, error) {
	engine := h.engine()
	if engine == "" {
		return nil, errors.New("when debugging or running explicitly, must call Handshake before Run")
	}
	if req.GetAttachDebugger() {
		return &pulumirpc.RunResponse{Error: "attaching a debugger is not supported by gpu-fabric's Python language host"}, nil
	}
	py, err := resolvePython(req.GetInfo(), "")
	if err != nil {
		return nil, err
	}

	// Arguments of the exec shim (python/cmd/pulumi-language-python-exec).
	args := []string{h.shim}
	add := func(flag, value string) {
		if value != "" {
			args = append(args, "--"+flag, value)
		}
	}
	add("monitor", req.GetMonitorAddress())
	add("engine", engine)
	add("project", req.GetProject())
	add("root_directory", req.GetInfo().GetRootDirectory())
	add("stack", req.GetStack())
	add("pwd", req.GetPwd())
	add("dry_run", strconv.FormatBool(req.GetDryRun()))
	add("parallel", strconv.Itoa(int(req.GetParallel())))
	add("tracing", h.tracing)
	add("organization", req.GetOrganization())
	entry := req.GetInfo().GetEntryPoint()
	if entry == "" {
		entry = "."
	}
	args = append(args, entry)
	args = append(args, req.GetArgs()...)

	env := py.environ(os.Environ())
	if req.GetConfig() != nil {
		cfg, err := json.Marshal(req.GetConfig())
		if err != nil {
			return nil, fmt.Errorf("failed to serialize configuration: %w", err)
		}
		env = append(env, "PULUMI_CONFIG="+string(cfg))
	}
	secretKeys := "[]"
	if keys := req.GetConfigSecretKeys(); keys != nil {
		b, err := json.Marshal(keys)
		if err != nil {
			return nil, fmt.Errorf("failed to serialize configuration secret keys: %w", err)
		}
		secretKeys = string(b)
	}
	env = append(env, "PULUMI_CONFIG_SECRET_KEYS="+secretKeys)

	// Output goes straight to our own stdout/stderr, which the engine relays.
	cmd := exec.CommandContext(ctx, py.exe, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		_ = os.Stdout.Sync()
		_ = os.Stderr.Sync()
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok {
				switch ws.ExitStatus() {
				case exitCodeUserActionable:
					return &pulumirpc.RunResponse{Bail: true}, nil
				case 0:
					err = fmt.Errorf("program exited unexpectedly: %w", exitErr)
				default:
					err = fmt.Errorf("program exited with non-zero exit code: %d", ws.ExitStatus())
				}
			} else {
				err = fmt.Errorf("program exited unexpectedly: %w", exitErr)
			}
		} else {
			err = fmt.Errorf("problem executing program (could not run language executor): %w", err)
		}
		return &pulumirpc.RunResponse{Error: err.Error()}, nil
	}
	return &pulumirpc.RunResponse{}, nil
}

// --- RunPlugin --------------------------------------------------------------

// streamWriter forwards output to the engine; one mutex serialises Send,
// because stdout and stderr are copied by two goroutines.
type streamWriter struct {
	mu     *sync.Mutex
	server pulumirpc.LanguageRuntime_RunPluginServer
	stderr bool
}

func (w streamWriter) Write(p []byte) (int, error) {
	b := append([]byte(nil), p...)
	msg := &pulumirpc.RunPluginResponse{Output: &pulumirpc.RunPluginResponse_Stdout{Stdout: b}}
	if w.stderr {
		msg = &pulumirpc.RunPluginResponse{Output: &pulumirpc.RunPluginResponse_Stderr{Stderr: b}}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.server.Send(msg); err != nil {
		return 0, err
	}
	return len(p), nil
}

// RunPlugin runs a plugin directory whose PulumiPlugin.yaml / PulumiPolicy.yaml
// says `runtime: python`:
//
//   - Kind "analyzer" (policy pack) with __main__.py:
//     python -u -m pulumi.policy <engine address> <pack dir>, cwd = pack dir.
//     pulumi.policy (in the pulumi SDK) runs the pack's __main__.py with
//     runpy; the pack's PolicyPack then serves the Analyzer service and
//     prints its port, which the engine reads from our streamed stdout.
//   - any other kind with __main__.py: python -u <plugin dir> <args...>,
//     cwd = req.Pwd, which is what upstream does for bare plugin directories
//     (upstream runs `python <dir> args`, without -u; -u only avoids
//     buffering of the port line).
//
// Upstream additionally runs buildable packages without __main__.py via
// `python -m pulumi.run.plugin <project name>`; that is not supported here.
func (h *pythonHost) RunPlugin(
	req *pulumirpc.RunPluginRequest, server pulumirpc.LanguageRuntime_RunPluginServer,
) error {
	info := req.GetInfo()
	dir := info.GetProgramDirectory()
	if dir == "" {
		dir = req.GetProgram()
	}
	if req.GetAttachDebugger() {
		return errors.New("attaching a debugger is not supported by gpu-fabric's Python language host")
	}
	py, err := resolvePython(info, "venv")
	if err != nil {
		return err
	}
	root := info.GetRootDirectory()
	if root == "" {
		root = dir
	}
	if _, err := os.Stat(filepath.Join(root, "__main__.py")); err != nil {
		if os.IsNotExist(err) {
			return fmt.Errorf("plugin in %s is not runnable: gpu-fabric's Python language host only runs "+
				"plugin directories that contain __main__.py", root)
		}
		return fmt.Errorf("looking for __main__.py: %w", err)
	}

	var args []string
	cwd := req.GetPwd()
	if req.GetKind() == "analyzer" {
		if len(req.GetArgs()) == 0 {
			return errors.New("policy pack started without the engine address argument")
		}
		args = append([]string{"-u", "-m", "pulumi.policy", req.GetArgs()[0], dir}, req.GetArgs()[1:]...)
		cwd = dir
	} else {
		args = append([]string{"-u", dir}, req.GetArgs()...)
	}

	env := req.GetEnv()
	if len(env) == 0 {
		env = os.Environ()
	}
	env = append(py.environ(env), "PYTHONUNBUFFERED=1")

	cmd := exec.CommandContext(server.Context(), py.exe, args...)
	cmd.Dir = cwd
	cmd.Env = env
	var mu sync.Mutex
	cmd.Stdout = streamWriter{mu: &mu, server: server}
	cmd.Stderr = streamWriter{mu: &mu, server: server, stderr: true}
	if err := cmd.Run(); err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok {
				code := ws.ExitStatus()
				if ws.Signaled() {
					code = 128 + int(ws.Signal())
				}
				mu.Lock()
				defer mu.Unlock()
				return server.Send(&pulumirpc.RunPluginResponse{
					Output: &pulumirpc.RunPluginResponse_Exitcode{Exitcode: int32(code)}, //nolint:gosec
				})
			}
			return fmt.Errorf("program exited unexpectedly: %w", exitErr)
		}
		return fmt.Errorf("problem executing plugin program (could not run language executor): %w", err)
	}
	return nil
}
