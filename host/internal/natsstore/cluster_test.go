package natsstore

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// cluster is a JetStream cluster of NATS servers in this test process,
// each on its own local ports and directory.
type cluster struct {
	t     testing.TB
	name  string
	nodes []*server.Server
	opts  []*server.Options
}

// startCluster starts n clustered servers and waits until JetStream has a
// leader; they shut down at cleanup.
func startCluster(t testing.TB, n int) *cluster {
	t.Helper()
	c := &cluster{t: t, name: "wasmtask-test"}
	// JetStream wants every node's routes from the start: the route ports
	// are picked first.
	ports := make([]int, n)
	routes := make([]*url.URL, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = l.Addr().(*net.TCPAddr).Port
		l.Close()
		routes[i] = &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", ports[i])}
	}
	for i := range n {
		o := &server.Options{
			ServerName: fmt.Sprintf("n%d", i+1),
			Host:       "127.0.0.1", Port: -1,
			JetStream: true, StoreDir: t.TempDir(),
			NoSigs: true, NoLog: true,
			Cluster: server.ClusterOpts{Name: c.name, Host: "127.0.0.1", Port: ports[i]},
			Routes:  routes,
		}
		c.nodes, c.opts = append(c.nodes, c.launch(o)), append(c.opts, o)
	}
	for i, srv := range c.nodes {
		c.ready(srv, c.opts[i])
	}
	t.Cleanup(func() {
		for _, s := range c.nodes {
			if s != nil {
				s.Shutdown()
				s.WaitForShutdown()
			}
		}
	})
	c.waitLeader()
	return c
}

// launch starts a server without waiting for it: a clustered server is
// ready only once its JetStream peers are up too.
func (c *cluster) launch(o *server.Options) *server.Server {
	c.t.Helper()
	srv, err := server.NewServer(o)
	if err != nil {
		c.t.Fatal(err)
	}
	srv.Start()
	return srv
}

func (c *cluster) ready(srv *server.Server, o *server.Options) {
	c.t.Helper()
	if !srv.ReadyForConnections(60 * time.Second) {
		c.t.Fatalf("nats server %s did not start", o.ServerName)
	}
}

// waitLeader waits until the running servers agree on a JetStream meta
// leader.
func (c *cluster) waitLeader() {
	c.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		for _, s := range c.nodes {
			if s != nil && s.JetStreamIsLeader() {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatal("the cluster elected no JetStream leader")
}

// url lists the client URLs of the running servers.
func (c *cluster) url() string {
	var urls []string
	for _, s := range c.nodes {
		if s != nil {
			urls = append(urls, s.ClientURL())
		}
	}
	return strings.Join(urls, ",")
}

// kill stops node i as a crash would (its directory stays).
func (c *cluster) kill(i int) {
	c.nodes[i].Shutdown()
	c.nodes[i].WaitForShutdown()
	c.nodes[i] = nil
}

// restart starts node i again on its directory.
func (c *cluster) restart(i int) {
	o := c.opts[i].Clone()
	c.nodes[i] = c.launch(o)
	c.ready(c.nodes[i], o)
}
