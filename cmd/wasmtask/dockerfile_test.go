package main

import (
	"encoding/json"
	goversion "go/version"
	"io"
	"maps"
	"net"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd  string // upper case: FROM, RUN, …
	args string
	line int
}

// parseDockerfile splits a Dockerfile into instructions. It knows what
// this repository's Dockerfile uses: comments, blank lines, backslash
// continuations.
func parseDockerfile(t *testing.T, text string) []instruction {
	t.Helper()
	var out []instruction
	var cur strings.Builder
	start := 0
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if cur.Len() == 0 {
			start = i + 1
		}
		if more, ok := strings.CutSuffix(trimmed, `\`); ok {
			cur.WriteString(more + " ")
			continue
		}
		cur.WriteString(trimmed)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args), line: start})
		cur.Reset()
	}
	if cur.Len() > 0 {
		t.Fatalf("Dockerfile ends inside a continued line")
	}
	return out
}

// execForm decodes an instruction's JSON (exec) form.
func execForm(t *testing.T, in instruction) []string {
	t.Helper()
	var argv []string
	if err := json.Unmarshal([]byte(in.args), &argv); err != nil {
		t.Fatalf("line %d: %s %s is not in exec form (a JSON array): %v", in.line, in.cmd, in.args, err)
	}
	return argv
}

// TestDockerfile checks the container image definition for what cannot be
// built here: a multi-stage build with base images pinned by tag (build
// arguments whose defaults are the pinned images), a static
// (CGO_ENABLED=0) build of this command that sets its version, a final
// stage on distroless or scratch that runs as a non-root user, and a
// command the CLI accepts, listening on every interface at the exposed
// port. It also checks that the local build script's build arguments are
// the Dockerfile's.
func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	ins := parseDockerfile(t, string(b))

	// Global build arguments (before the first FROM), which FROM may
	// name: each has a default, so that a build without --build-arg pulls
	// the pinned images.
	globals := map[string]string{}
	for len(ins) > 0 && ins[0].cmd == "ARG" {
		name, value, ok := strings.Cut(ins[0].args, "=")
		if !ok || value == "" {
			t.Errorf("line %d: ARG %s before the first FROM has no default", ins[0].line, ins[0].args)
		}
		globals[name] = value
		ins = ins[1:]
	}
	// from is a FROM's image with the global arguments' defaults in place.
	from := func(in instruction) string {
		image := strings.Fields(in.args)[0]
		return os.Expand(image, func(name string) string {
			v, ok := globals[name]
			if !ok {
				t.Errorf("line %d: FROM %s names $%s, which is no global ARG", in.line, image, name)
			}
			return v
		})
	}

	// Stages, and the base images pinned by a tag.
	var stages [][]instruction
	stageNames := map[string]bool{}
	declared := maps.Clone(globals) // every ARG, for --build-arg
	for _, in := range ins {
		if in.cmd == "FROM" {
			f := strings.Fields(in.args)
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				stageNames[f[2]] = true
			}
			stages = append(stages, nil)
		}
		if len(stages) == 0 {
			t.Fatalf("line %d: %s before the first FROM", in.line, in.cmd)
		}
		if in.cmd == "ARG" {
			name, _, _ := strings.Cut(in.args, "=")
			declared[name] = ""
		}
		stages[len(stages)-1] = append(stages[len(stages)-1], in)
	}
	if len(stages) < 2 {
		t.Fatalf("%d stages, want a build stage and a runtime stage", len(stages))
	}
	for _, st := range stages {
		image := from(st[0])
		if stageNames[image] || image == "scratch" {
			continue
		}
		name, tag, ok := strings.Cut(image[strings.LastIndex(image, "/")+1:], ":")
		if !ok || tag == "" || tag == "latest" {
			t.Errorf("line %d: base image %s is not pinned by a tag", st[0].line, image)
		}
		// The build stage's Go must be at least go.mod's.
		if name == "golang" {
			goVersion := "go" + strings.SplitN(tag, "-", 2)[0]
			if want := goModGoVersion(t); goversion.Compare(goVersion, want) < 0 {
				t.Errorf("line %d: %s builds with %s, but go.mod needs %s", st[0].line, image, goVersion, want)
			}
		}
	}

	// The build: static, this command, the version set.
	built := false
	for _, st := range stages[:len(stages)-1] {
		for _, in := range st {
			if in.cmd == "RUN" && strings.Contains(in.args, "go build") {
				for _, want := range []string{"CGO_ENABLED=0", "./cmd/wasmtask", "-X main.version="} {
					if !strings.Contains(in.args, want) {
						t.Errorf("line %d: go build lacks %s: %s", in.line, want, in.args)
					}
				}
				built = true
			}
		}
	}
	if !built {
		t.Error("no build stage runs go build")
	}

	// The runtime stage.
	final := stages[len(stages)-1]
	if image := from(final[0]); image != "scratch" && !strings.HasPrefix(image, "gcr.io/distroless/") {
		t.Errorf("runtime image %s is neither distroless nor scratch", image)
	}
	var user, entrypoint, cmd []string
	var exposed []string
	copied := map[string]bool{}
	for _, in := range final {
		switch in.cmd {
		case "USER":
			user = []string{in.args}
		case "ENTRYPOINT":
			entrypoint = execForm(t, in)
		case "CMD":
			cmd = execForm(t, in)
		case "EXPOSE":
			exposed = append(exposed, strings.Fields(in.args)...)
		case "COPY":
			f := strings.Fields(in.args)
			copied[f[len(f)-1]] = true
		}
	}
	if len(user) == 0 {
		t.Error("the runtime stage sets no USER: the server would run as root")
	} else if u, _, _ := strings.Cut(user[0], ":"); u == "root" || u == "0" || u == "" {
		t.Errorf("USER %s: the server runs as root", user[0])
	}
	if len(entrypoint) != 1 || !copied[entrypoint[0]] {
		t.Fatalf("ENTRYPOINT %q, want the one binary the runtime stage copies (copied: %v)", entrypoint, copied)
	}

	// The command: flags the CLI accepts, HTTP on every interface (a
	// container's port is reached through its own interface), at the
	// exposed port.
	if len(cmd) == 0 || cmd[0] != "serve" {
		t.Fatalf("CMD %q, want wasmtask serve …", cmd)
	}
	set, err := parseServe(cmd[1:], io.Discard)
	if err != nil {
		t.Fatalf("wasmtask %s: %v", strings.Join(cmd, " "), err)
	}
	host, port, err := net.SplitHostPort(set.httpAddr)
	if err != nil || (host != "0.0.0.0" && host != "::" && host != "[::]") {
		t.Errorf("CMD serves --http %q, want 0.0.0.0:PORT: a loopback address is unreachable from outside the container", set.httpAddr)
	}
	if !slices.Contains(exposed, port) && !slices.Contains(exposed, port+"/tcp") {
		t.Errorf("CMD listens on port %s, EXPOSE says %v", port, exposed)
	}
	if set.cfg.CacheDir != "" && !copied[set.cfg.CacheDir] {
		t.Errorf("the compile cache %s is no directory the image creates for its user (copied: %v)", set.cfg.CacheDir, copied)
	}

	// The local build script sets only arguments the Dockerfile declares,
	// and replaces every base the Dockerfile names by an argument.
	script, err := os.ReadFile(localBuildScript)
	if err != nil {
		t.Fatal(err)
	}
	passed := map[string]bool{}
	for _, m := range regexp.MustCompile(`--build-arg ([A-Za-z_][A-Za-z0-9_]*)=`).FindAllStringSubmatch(string(script), -1) {
		passed[m[1]] = true
		if _, ok := declared[m[1]]; !ok {
			t.Errorf("%s passes --build-arg %s, which the Dockerfile does not declare", localBuildScript, m[1])
		}
	}
	for name := range globals {
		if !passed[name] {
			t.Errorf("%s does not set the base image argument %s", localBuildScript, name)
		}
	}
}

// localBuildScript builds the Dockerfile on local stand-ins for its base
// images, runs it and checks it (TestContainerImage).
const localBuildScript = "testdata/container/build-local.sh"

// goModGoVersion is go.mod's go directive, as "go1.N.M".
func goModGoVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("go.mod has no go directive")
	}
	return "go" + string(m[1])
}
