package testcluster

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/tools/clientcmd/api/latest"
)

func TestFindBinariesMissingSaysHowToBuild(t *testing.T) {
	dir := t.TempDir()
	_, _, err := findBinaries(dir)
	if err == nil {
		t.Fatal("findBinaries in an empty directory succeeded")
	}
	for _, want := range []string{"etcd", "kube-apiserver", dir, "make cluster-bin"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestFindBinariesFromEnv(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{etcdBinary, apiserverBinary} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(BinDirEnv, dir)
	etcd, apiserver, err := findBinaries("")
	if err != nil {
		t.Fatalf("findBinaries: %v", err)
	}
	if etcd != filepath.Join(dir, etcdBinary) || apiserver != filepath.Join(dir, apiserverBinary) {
		t.Errorf("findBinaries = %q, %q; want both in %s", etcd, apiserver, dir)
	}
}

func TestRepoRoot(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatalf("repoRoot: %v", err)
	}
	// This package lives at <root>/internal/testcluster.
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Dir(filepath.Dir(wd)); root != want {
		t.Errorf("repoRoot = %q, want %q", root, want)
	}
}

func TestJSONInt64(t *testing.T) {
	for in, want := range map[string]int64{`"42"`: 42, `42`: 42, `null`: 0, `""`: 0} {
		var got jsonInt64
		if err := json.Unmarshal([]byte(in), &got); err != nil || int64(got) != want {
			t.Errorf("unmarshal %s = %d, %v; want %d", in, got, err, want)
		}
	}
	var bad jsonInt64
	if err := json.Unmarshal([]byte(`"x"`), &bad); err == nil {
		t.Error(`unmarshal "x" succeeded`)
	}
}

func TestTokenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.csv")
	if err := writeTokenFile(path, "admintok", "usertok"); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := "admintok,admin,admin-uid,\"system:masters\"\nusertok,alice,alice-uid\n"
	if string(data) != want {
		t.Errorf("token file = %q, want %q", data, want)
	}
}

func TestKubeconfigParses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	ca := []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
	if err := writeKubeconfig(path, "https://127.0.0.1:6443", AdminUser, "tok", ca); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := runtime.Decode(latest.Codec, data)
	if err != nil {
		t.Fatalf("decode kubeconfig: %v\n%s", err, data)
	}
	cfg := obj.(*clientcmdapi.Config)
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil {
		t.Fatalf("current context %q missing", cfg.CurrentContext)
	}
	cluster, user := cfg.Clusters[ctx.Cluster], cfg.AuthInfos[ctx.AuthInfo]
	if cluster == nil || user == nil {
		t.Fatalf("context %+v names a missing cluster or user", ctx)
	}
	if cluster.Server != "https://127.0.0.1:6443" || string(cluster.CertificateAuthorityData) != string(ca) || user.Token != "tok" {
		t.Errorf("kubeconfig = server %q, CA %q, token %q", cluster.Server, cluster.CertificateAuthorityData, user.Token)
	}
}
