package testcluster

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/template"
)

const (
	// AdminUser is the user name of the token returned by AdminConfig. It is
	// a member of system:masters.
	AdminUser = "admin"
	// UnprivilegedUser is the user name of the token returned by UserConfig.
	// It belongs to no group beyond system:authenticated and has no RBAC
	// bindings.
	UnprivilegedUser = "alice"
)

// randomToken returns a random bearer token.
func randomToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// writeTokenFile writes the static token file for --token-auth-file. The
// format is CSV: token,user,uid,"group1,group2".
func writeTokenFile(path, adminToken, userToken string) error {
	content := fmt.Sprintf("%s,%s,%s-uid,\"system:masters\"\n%s,%s,%s-uid\n",
		adminToken, AdminUser, AdminUser, userToken, UnprivilegedUser, UnprivilegedUser)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		return fmt.Errorf("write token file: %w", err)
	}
	return nil
}

// writeServiceAccountKey generates an RSA key and writes it as PEM to path.
// The same file serves --service-account-key-file (the API server derives
// the public key) and --service-account-signing-key-file.
func writeServiceAccountKey(path string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return fmt.Errorf("generate service account key: %w", err)
	}
	block := &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		return fmt.Errorf("write service account key: %w", err)
	}
	return nil
}

// readServingCA returns the PEM bundle the API server wrote for its
// self-signed serving certificate. The file holds the serving certificate
// followed by the CA that signed it, so it works as a client's CAData.
func readServingCA(certDir string) ([]byte, error) {
	data, err := os.ReadFile(filepath.Join(certDir, "apiserver.crt"))
	if err != nil {
		return nil, fmt.Errorf("read serving certificate: %w", err)
	}
	if !strings.Contains(string(data), "BEGIN CERTIFICATE") {
		return nil, fmt.Errorf("serving certificate %s holds no PEM certificate", filepath.Join(certDir, "apiserver.crt"))
	}
	return data, nil
}

var kubeconfigTemplate = template.Must(template.New("kubeconfig").Parse(`apiVersion: v1
kind: Config
clusters:
- name: testcluster
  cluster:
    server: {{ .Server }}
    certificate-authority-data: {{ .CAData }}
users:
- name: {{ .User }}
  user:
    token: {{ .Token }}
contexts:
- name: testcluster
  context:
    cluster: testcluster
    user: {{ .User }}
current-context: testcluster
`))

// writeKubeconfig writes a kubeconfig for server, authenticating as user
// with token and trusting the PEM bundle caPEM.
func writeKubeconfig(path, server, user, token string, caPEM []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	err = kubeconfigTemplate.Execute(f, map[string]string{
		"Server": server,
		"CAData": base64.StdEncoding.EncodeToString(caPEM),
		"User":   user,
		"Token":  token,
	})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return nil
}
