package main

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
)

func command(name string, args ...string) string {
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func goEnv() string {
	if out := command("go", "env", "GOOS", "GOARCH"); out != "" {
		return strings.Join(strings.Fields(out), "/")
	}
	return runtime.GOOS + "/" + runtime.GOARCH
}

func goVersion() string {
	if out := command("go", "version"); out != "" {
		return strings.TrimPrefix(out, "go version ")
	}
	return runtime.Version()
}

func cpuInfo() []string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return nil
	}
	return strings.Split(string(b), "\n")
}

func cpuModel(r *results) string {
	for _, l := range cpuInfo() {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	if c := r.config["cpu"]; c != "" {
		return c
	}
	return "unknown"
}

func cpuCores() int {
	n := 0
	for _, l := range cpuInfo() {
		if k, _, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "processor" {
			n++
		}
	}
	if n == 0 {
		n = runtime.NumCPU()
	}
	return n
}
