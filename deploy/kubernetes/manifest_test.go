// Package kubernetes holds the manifests of deploy/kubernetes; its test
// checks that the Indexed Job is one Kubernetes would run as documented.
package kubernetes

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

type manifest struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Spec struct {
		// Job
		CompletionMode       string `yaml:"completionMode"`
		Completions          *int   `yaml:"completions"`
		Parallelism          *int   `yaml:"parallelism"`
		BackoffLimitPerIndex *int   `yaml:"backoffLimitPerIndex"`
		MaxFailedIndexes     *int   `yaml:"maxFailedIndexes"`
		PodFailurePolicy     *struct {
			Rules []struct {
				Action      string `yaml:"action"`
				OnExitCodes struct {
					ContainerName string `yaml:"containerName"`
					Operator      string `yaml:"operator"`
					Values        []int  `yaml:"values"`
				} `yaml:"onExitCodes"`
			} `yaml:"rules"`
		} `yaml:"podFailurePolicy"`
		Template struct {
			Spec struct {
				RestartPolicy string `yaml:"restartPolicy"`
				Containers    []struct {
					Name    string   `yaml:"name"`
					Image   string   `yaml:"image"`
					Command []string `yaml:"command"`
					Args    []string `yaml:"args"`
					Env     []struct {
						Name  string `yaml:"name"`
						Value string `yaml:"value"`
					} `yaml:"env"`
					Resources    map[string]map[string]string `yaml:"resources"`
					VolumeMounts []struct {
						Name      string `yaml:"name"`
						MountPath string `yaml:"mountPath"`
					} `yaml:"volumeMounts"`
				} `yaml:"containers"`
				Volumes []struct {
					Name                  string `yaml:"name"`
					PersistentVolumeClaim struct {
						ClaimName string `yaml:"claimName"`
					} `yaml:"persistentVolumeClaim"`
				} `yaml:"volumes"`
			} `yaml:"spec"`
		} `yaml:"template"`
		// PersistentVolumeClaim
		AccessModes []string                     `yaml:"accessModes"`
		Resources   map[string]map[string]string `yaml:"resources"`
	} `yaml:"spec"`
}

func TestIndexedJobManifest(t *testing.T) {
	b, err := os.ReadFile("hunt-job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true) // a misspelt field is an error, not ignored
	docs := map[string]manifest{}
	for {
		var m manifest
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("hunt-job.yaml: %v", err)
		}
		if m.APIVersion == "" || m.Kind == "" || m.Metadata.Name == "" {
			t.Fatalf("a document without apiVersion, kind or metadata.name: %+v", m)
		}
		docs[m.Kind] = m
	}
	job, ok := docs["Job"]
	if !ok || job.APIVersion != "batch/v1" {
		t.Fatalf("no batch/v1 Job in hunt-job.yaml: %v", docs)
	}
	s := job.Spec
	if s.CompletionMode != "Indexed" || s.Completions == nil || *s.Completions < 1 {
		t.Fatalf("the Job is not Indexed with completions: mode %q, completions %v", s.CompletionMode, s.Completions)
	}
	if s.BackoffLimitPerIndex != nil && s.CompletionMode != "Indexed" {
		t.Fatal("backoffLimitPerIndex needs an Indexed Job")
	}
	pod := s.Template.Spec
	// Kubernetes refuses a podFailurePolicy unless pods never restart.
	if pod.RestartPolicy != "Never" {
		t.Fatalf("restartPolicy %q: a Job with podFailurePolicy needs Never", pod.RestartPolicy)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	if s.PodFailurePolicy == nil || len(s.PodFailurePolicy.Rules) == 0 || s.PodFailurePolicy.Rules[0].OnExitCodes.ContainerName != c.Name {
		t.Fatalf("podFailurePolicy does not name the container %q", c.Name)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	// Shard I/N covers the seeds only if the N indexes are 0..N-1.
	if n, err := strconv.Atoi(env["SHARDS"]); err != nil || n != *s.Completions {
		t.Fatalf("SHARDS %q is not the Job's completions (%d)", env["SHARDS"], *s.Completions)
	}
	script := strings.Join(append(c.Command, c.Args...), " ")
	for _, want := range []string{"replay sim", "--seeds", "--check", `--shard "$JOB_COMPLETION_INDEX/$SHARDS"`, `--results "/results/shard-$JOB_COMPLETION_INDEX.json"`} {
		if !strings.Contains(script, want) {
			t.Fatalf("the container's command lacks %q:\n%s", want, script)
		}
	}
	pvc, ok := docs["PersistentVolumeClaim"]
	if !ok || len(pod.Volumes) != 1 || pod.Volumes[0].PersistentVolumeClaim.ClaimName != pvc.Metadata.Name {
		t.Fatalf("the results volume does not claim the manifest's PersistentVolumeClaim")
	}
	if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != "/results" || c.VolumeMounts[0].Name != pod.Volumes[0].Name {
		t.Fatalf("the results volume is not mounted at /results: %+v", c.VolumeMounts)
	}
	if len(pvc.Spec.AccessModes) != 1 || pvc.Spec.AccessModes[0] != "ReadWriteMany" {
		t.Fatalf("the results claim is %v: every pod writes to it at once, it must be ReadWriteMany", pvc.Spec.AccessModes)
	}
}

// TestHuntScriptExitCodes runs the container's shell script, with a replay
// built from this checkout on its PATH and the results volume in a
// temporary directory: a hunt that finds failing seeds makes the pod
// succeed, and a SIGTERM to the shell (the container's PID 1 when a pod is
// preempted) reaches the hunt, which writes its result file marked
// interrupted, and fails the pod (130) so the index runs again.
func TestHuntScriptExitCodes(t *testing.T) {
	b, err := os.ReadFile("hunt-job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var script string
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var m manifest
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if m.Kind == "Job" {
			script = m.Spec.Template.Spec.Containers[0].Args[0]
		}
	}
	bin := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, "replay"), "../../cmd/replay").CombinedOutput(); err != nil {
		t.Fatalf("build replay: %v\n%s", err, out)
	}
	run := func(seeds string, term time.Duration) (int, string, string) {
		results := t.TempDir()
		cmd := exec.Command("/bin/sh", "-c", strings.ReplaceAll(script, "/results/", results+"/"))
		cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
			"SEEDS="+seeds, "SHARDS=1", "JOB_COMPLETION_INDEX=0")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if term > 0 {
			time.Sleep(term)
			cmd.Process.Signal(syscall.SIGTERM)
		}
		err := cmd.Wait()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		rf, _ := os.ReadFile(filepath.Join(results, "shard-0.json"))
		return code, string(rf), out.String()
	}
	if code, rf, out := run("1-20", 0); code != 0 || !strings.Contains(rf, `"kind": "violation"`) {
		t.Fatalf("a hunt with failing seeds: pod exit %d, want 0\nresults: %s\n%s", code, rf, out)
	}
	if code, rf, out := run("1-1000000", 2*time.Second); code != 130 || !strings.Contains(rf, `"stopped": "interrupted"`) {
		t.Fatalf("a preempted hunt: pod exit %d, want 130\nresults: %s\n%s", code, rf, out)
	}
}
