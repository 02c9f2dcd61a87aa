// fakenode: what a real kubelet needs, besides itself, on a machine with no container runtime and no
// accelerators: a CRI endpoint and device plugins that report NUMA topology. gpu-fabric's real-kubelet
// tests (tests/e2e/test_kubelet_topology.py) run the kubelet's Topology Manager against these.
//
//	fakenode cri SOCKET
//	    Serves k8s.io/cri-client/pkg/fake's RemoteRuntime (the runtime and image services kubemark's
//	    hollow kubelet uses) on the unix socket SOCKET, reporting the cgroupfs driver. Containers
//	    "run" without a process; their LogPath stays empty (see the hazard below).
//
//	fakenode deviceplugin DIR RESOURCE=COUNT/NUMA_NODES ...
//	    Serves one device plugin (k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1) per argument from DIR
//	    (the kubelet's device-plugins folder) and registers each with DIR/kubelet.sock, again whenever
//	    the kubelet restarts. RESOURCE=8/2 advertises 8 devices split in order over NUMA nodes 0 and 1
//	    (devices 0-3 on node 0, 4-7 on node 1); each device's ID is the resource name's last segment
//	    and its index ("gpu3", "efa12").
//
// Hazard: with the fake runtime's empty LogPath, the kubelet's container log manager
// (pkg/kubelet/logs, Clean) globs "*" in its working directory when a container is removed and
// deletes what it finds. Start the kubelet from an empty folder.
package main

import (
	"context"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	fakeremote "k8s.io/cri-client/pkg/fake"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

const usage = "usage: fakenode cri SOCKET | fakenode deviceplugin DIR RESOURCE=COUNT/NUMA_NODES ..."

func main() {
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	if len(os.Args) < 3 {
		log.Fatal(usage)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	switch os.Args[1] {
	case "cri":
		if len(os.Args) != 3 {
			log.Fatal(usage)
		}
		serveRuntime(os.Args[2], stop)
	case "deviceplugin":
		if len(os.Args) < 4 {
			log.Fatal(usage)
		}
		var plugins []*plugin
		for _, spec := range os.Args[3:] {
			p, err := parsePlugin(os.Args[2], spec)
			if err != nil {
				log.Fatalf("%s: %v", spec, err)
			}
			plugins = append(plugins, p)
		}
		go keepRegistered(os.Args[2], plugins)
		<-stop
	default:
		log.Fatal(usage)
	}
}

func serveRuntime(socket string, stop <-chan os.Signal) {
	_ = os.Remove(socket)
	runtime := fakeremote.NewFakeRemoteRuntime()
	// An image without a size fails the kubelet's image inspection ("Id or size of image ... is not set").
	runtime.ImageService.SetFakeImageSize(1 << 20)
	runtime.RuntimeService.FakeLinuxConfiguration = &runtimeapi.LinuxRuntimeConfiguration{
		CgroupDriver: runtimeapi.CgroupDriver_CGROUPFS,
	}
	if err := runtime.Start("unix://" + socket); err != nil {
		log.Fatal(err)
	}
	log.Printf("fake CRI serving on %s", socket)
	<-stop
	runtime.Stop()
}

type plugin struct {
	pluginapi.UnimplementedDevicePluginServer
	resource string
	socket   string
	devices  []*pluginapi.Device
	server   *grpc.Server
}

// parsePlugin reads RESOURCE=COUNT/NUMA_NODES.
func parsePlugin(dir, spec string) (*plugin, error) {
	resource, layout, ok := strings.Cut(spec, "=")
	countText, nodesText, ok2 := strings.Cut(layout, "/")
	if !ok || !ok2 || !strings.Contains(resource, "/") {
		return nil, fmt.Errorf("want RESOURCE=COUNT/NUMA_NODES, e.g. nvidia.com/gpu=8/2")
	}
	count, err := strconv.Atoi(countText)
	if err != nil || count < 1 {
		return nil, fmt.Errorf("COUNT must be a positive integer")
	}
	nodes, err := strconv.Atoi(nodesText)
	if err != nil || nodes < 1 || count%nodes != 0 {
		return nil, fmt.Errorf("NUMA_NODES must be a positive divisor of COUNT")
	}
	prefix := resource[strings.LastIndex(resource, "/")+1:]
	p := &plugin{resource: resource, socket: filepath.Join(dir, "fakenode-"+prefix+".sock")}
	perNode := count / nodes
	for i := 0; i < count; i++ {
		p.devices = append(p.devices, &pluginapi.Device{
			ID:       fmt.Sprintf("%s%d", prefix, i),
			Health:   pluginapi.Healthy,
			Topology: &pluginapi.TopologyInfo{Nodes: []*pluginapi.NUMANode{{ID: int64(i / perNode)}}},
		})
	}
	return p, nil
}

// serve (re)creates the plugin's socket. The kubelet's device manager empties its folder (all but
// kubelet.sock) when it starts, so each registration is preceded by a fresh socket.
func (p *plugin) serve() error {
	if p.server != nil {
		p.server.Stop()
	}
	_ = os.Remove(p.socket)
	listener, err := net.Listen("unix", p.socket)
	if err != nil {
		return err
	}
	p.server = grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(p.server, p)
	go p.server.Serve(listener)
	return nil
}

// keepRegistered registers every plugin whenever a new kubelet.sock appears (a kubelet start or
// restart creates it anew, so its modification time changes).
func keepRegistered(dir string, plugins []*plugin) {
	kubeletSocket := filepath.Join(dir, "kubelet.sock")
	var registeredWith time.Time
	for {
		info, err := os.Stat(kubeletSocket)
		if err == nil && !info.ModTime().Equal(registeredWith) {
			all := true
			for _, p := range plugins {
				if err := p.serve(); err != nil {
					log.Printf("serve %s: %v", p.resource, err)
					all = false
					continue
				}
				if err := register(kubeletSocket, p); err != nil {
					log.Printf("register %s: %v", p.resource, err)
					all = false
					continue
				}
				log.Printf("registered %s (%d devices)", p.resource, len(p.devices))
			}
			if all {
				registeredWith = info.ModTime()
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func register(kubeletSocket string, p *plugin) error {
	conn, err := grpc.NewClient("unix://"+kubeletSocket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version:      pluginapi.Version,
		Endpoint:     filepath.Base(p.socket),
		ResourceName: p.resource,
		Options:      &pluginapi.DevicePluginOptions{},
	})
	return err
}

func (p *plugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

func (p *plugin) ListAndWatch(_ *pluginapi.Empty, stream grpc.ServerStreamingServer[pluginapi.ListAndWatchResponse]) error {
	if err := stream.Send(&pluginapi.ListAndWatchResponse{Devices: p.devices}); err != nil {
		return err
	}
	<-stream.Context().Done()
	return nil
}

// Allocate answers with one environment variable per container naming its devices; which devices
// went to which container is what the kubelet checkpoints (device-plugins/kubelet_internal_checkpoint).
func (p *plugin) Allocate(_ context.Context, request *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	response := &pluginapi.AllocateResponse{}
	variable := "FAKENODE_" + strings.ToUpper(strings.NewReplacer(".", "_", "/", "_", "-", "_").Replace(p.resource))
	for _, container := range request.ContainerRequests {
		log.Printf("allocate %s: %s", p.resource, strings.Join(container.DevicesIds, ","))
		response.ContainerResponses = append(response.ContainerResponses, &pluginapi.ContainerAllocateResponse{
			Envs: map[string]string{variable: strings.Join(container.DevicesIds, ",")},
		})
	}
	return response, nil
}

func (p *plugin) PreStartContainer(context.Context, *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	return &pluginapi.PreStartContainerResponse{}, nil
}
