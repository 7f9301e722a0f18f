package config

import "fmt"

// Versions reported by cairn. cairn speaks etcd's protocol, so it reports
// the etcd version it is compatible with; CairnVersion is its own.
const (
	EtcdVersion    = "3.7.1"
	APIVersion     = "3.7"
	ClusterVersion = "3.7.0"
	CairnVersion   = "0.1.0"
)

// VersionText is what `--version` prints: etcd's four lines, then cairn's
// own version, so tools that parse etcd's output keep working.
func VersionText(gitSHA, goVersion, goOS, goArch string) string {
	return fmt.Sprintf("etcd Version: %s\nGit SHA: %s\nGo Version: %s\nGo OS/Arch: %s/%s\ncairn Version: %s\n",
		EtcdVersion, gitSHA, goVersion, goOS, goArch, CairnVersion)
}
