package natsstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/wasmtask/wasmtask/taskengine"
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
		c.opts[i].Port = srv.Addr().(*net.TCPAddr).Port // a restart keeps the client URL
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

// stopAll stops every node, as a whole-cluster outage.
func (c *cluster) stopAll() {
	for i := range c.nodes {
		if c.nodes[i] != nil {
			c.kill(i)
		}
	}
}

// startAll starts every stopped node on its directory and waits for a
// JetStream leader.
func (c *cluster) startAll() {
	var started []int
	for i := range c.nodes {
		if c.nodes[i] == nil {
			c.nodes[i] = c.launch(c.opts[i].Clone())
			started = append(started, i)
		}
	}
	for _, i := range started {
		c.ready(c.nodes[i], c.opts[i])
	}
	c.waitLeader()
}

// streamLeader names the node leading the bucket's stream.
func streamLeader(t testing.TB, kv jetstream.KeyValue) string {
	t.Helper()
	st, err := kv.Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	info := st.(*jetstream.KeyValueBucketStatus).StreamInfo()
	if info.Cluster == nil {
		t.Fatal("the bucket has no cluster information")
	}
	return info.Cluster.Leader
}

func replicasOf(t testing.TB, kv jetstream.KeyValue) int {
	t.Helper()
	n, err := bucketReplicas(t.Context(), kv)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestClusterReplication: on a three-node cluster the buckets get three
// replicas by default; a store asking for fewer leaves an existing bucket's
// replication as it is; one asking for more raises it; a server without a
// cluster gets one.
func TestClusterReplication(t *testing.T) {
	c := startCluster(t, 3)
	keys := testKeys(t, "index "+secret()+"\nkey k1 "+secret())
	a := openReplica(t, Config{URL: c.url(), Keys: keys, Prefix: "a"})
	if got := [2]int{replicasOf(t, a.s.tasks), replicasOf(t, a.s.leases)}; got != [2]int{3, 3} {
		t.Errorf("default replication on three nodes: tasks, leases = %v, want 3, 3", got)
	}
	fewer := openReplica(t, Config{URL: c.url(), Keys: keys, Prefix: "a", Replicas: 1})
	if got := replicasOf(t, fewer.s.tasks); got != 3 {
		t.Errorf("a store asking for 1 replica lowered the bucket to %d, want it left at 3", got)
	}

	one := openReplica(t, Config{URL: c.url(), Keys: keys, Prefix: "b", Replicas: 1})
	if got := replicasOf(t, one.s.tasks); got != 1 {
		t.Fatalf("asked for 1 replica: %d", got)
	}
	raised := openReplica(t, Config{URL: c.url(), Keys: keys, Prefix: "b", Replicas: 3})
	if got := [2]int{replicasOf(t, raised.s.tasks), replicasOf(t, one.s.tasks)}; got != [2]int{3, 3} {
		t.Errorf("a store asking for 3 replicas of an R1 bucket: %v as each store sees it, want 3", got)
	}

	if _, err := Open(t.Context(), Config{URL: c.url(), Keys: keys, Prefix: "c", Replicas: 5}); !errors.Is(err, errReplication) {
		t.Errorf("5 replicas on three nodes: Open = %v, want a replication error", err)
	}

	single := openReplica(t, Config{URL: startServer(t), Keys: keys})
	if got := replicasOf(t, single.s.tasks); got != 1 {
		t.Errorf("default replication without a cluster: %d, want 1", got)
	}
}

// TestClusterConcurrentFreshStarts: replicas that start together on a
// fresh cluster all start.
func TestClusterConcurrentFreshStarts(t *testing.T) {
	c := startCluster(t, 3)
	keys := testKeys(t, "index "+secret()+"\nkey k1 "+secret())
	const n = 4
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			s, err := Open(t.Context(), Config{URL: c.url(), Keys: keys})
			if err == nil {
				s.Close()
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("a replica started with the others: %v", err)
		}
	}
}

// TestClusterNodeKillUnderLoad: three replicas on a three-node cluster
// with the default (three) replicas; the node leading the tasks bucket is
// killed while tasks are created on one replica and read on another.
// Every acknowledged task stays readable, and service comes back once the
// cluster elected a new leader; the creates refused and reads failed
// meanwhile (none on an idle machine), and the time until service came
// back, are logged.
func TestClusterNodeKillUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a cluster node: not in -short")
	}
	c := startCluster(t, 3)
	keys := testKeys(t, "index "+secret()+"\nkey k1 "+secret())
	var rs []replica
	for range 3 {
		rs = append(rs, openReplica(t, Config{URL: c.url(), Keys: keys}))
	}
	leader := streamLeader(t, rs[0].s.tasks)
	quick := func(context.Context, *taskengine.Run) taskengine.Outcome { return taskengine.Outcome{Value: "done"} }

	var acked []string
	var refused, failedReads, streak int
	var killedAt, backAt time.Time
	var stall time.Duration // the longest create-and-read after the kill
	for op := 0; streak < 100; op++ {
		if op == 50 {
			for i, s := range c.nodes {
				if s.Name() == leader {
					c.kill(i)
				}
			}
			killedAt, streak = time.Now(), 0
		}
		// Calls may fail while the cluster elects a new leader (a loaded
		// machine makes that slower); past this many, service is not
		// coming back (with one replica every call fails).
		if refused+failedReads > 100 {
			t.Fatalf("service did not come back: %d creates refused, %d reads failed since the kill", refused, failedReads)
		}
		w, r := rs[op%3], rs[(op+1)%3]
		began := time.Now()
		task, err := w.e.Submit(t.Context(), "alice", taskengine.SubmitOptions{}, quick)
		if err != nil {
			if killedAt.IsZero() {
				t.Fatalf("before the kill: Submit: %v", err)
			}
			refused++
			streak = 0
			continue
		}
		acked = append(acked, task.ID)
		if _, err := r.e.Get(t.Context(), "alice", task.ID); err != nil {
			if killedAt.IsZero() {
				t.Fatalf("before the kill: Get: %v", err)
			}
			failedReads++
			streak = 0
			continue
		}
		if !killedAt.IsZero() {
			stall = max(stall, time.Since(began))
			if streak == 0 {
				backAt = time.Now()
			}
		}
		streak++
	}
	t.Logf("node %s (the tasks bucket's leader) killed: %d creates refused, %d reads failed, first success %v after the kill, longest create-and-read after it %v; %d tasks acknowledged",
		leader, refused, failedReads, backAt.Sub(killedAt).Round(time.Millisecond), stall.Round(time.Millisecond), len(acked))

	// Nothing acknowledged is lost: each replica reads every task, with
	// the killed node back in the cluster.
	for i, s := range c.nodes {
		if s == nil {
			c.restart(i)
		}
	}
	for _, id := range acked {
		for i, r := range rs {
			if _, out, err := r.e.Wait(t.Context(), "alice", id); err != nil || out.Value != "done" {
				t.Fatalf("replica %d: acknowledged task %s: %+v, %v", i, id, out, err)
			}
		}
	}
}
