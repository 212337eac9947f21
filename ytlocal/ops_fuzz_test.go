package ytlocal

import (
	"testing"

	"go.ytsaurus.tech/yt/go/yson"
)

// FuzzParseOpSpec feeds arbitrary YSON to the vanilla spec parser: it returns a spec or an
// error naming where — never panics — and an accepted spec has tasks with a command, a
// job count from 1 to 1000 and sandbox file names without a slash.
func FuzzParseOpSpec(f *testing.F) {
	for _, s := range []string{
		`{tasks={w={command="./yt-flow worker";job_count=2;file_paths=[<file_name="yt-flow";executable=%true>"//sys/bin/yt-flow"];environment={A=b};port_count=2}};max_failed_job_count=10;secure_vault={YT_TOKEN=t}}`,
		`{tasks={}}`, `{tasks={w={command="";job_count=0}}}`, `[]`, `#`,
		`{tasks={w={command=x;job_count=1;file_paths=["<file_name=\"../x\">//a"]}}}`,
		`{alias="*a";fail_on_job_restart=%true;tasks={w={command=x;job_count=1u}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if yson.Unmarshal(data, &v) != nil {
			return
		}
		sp, err := parseOpSpec(v)
		if err != nil {
			return
		}
		if len(sp.tasks) == 0 {
			t.Fatal("accepted a spec without tasks")
		}
		for name, task := range sp.tasks {
			if task.command == "" || task.jobCount < 1 || task.jobCount > 1000 {
				t.Fatalf("task %q accepted with command %q, job_count %d", name, task.command, task.jobCount)
			}
			for _, f := range task.files {
				if f.name == "" || f.name == "." || f.name == ".." {
					t.Fatalf("task %q: bad file name %q accepted", name, f.name)
				}
				for _, r := range f.name {
					if r == '/' || r == 0 {
						t.Fatalf("task %q: file name %q accepted", name, f.name)
					}
				}
			}
		}
		if _, ok := sp.public["secure_vault"]; ok {
			t.Fatal("the public spec keeps the secure vault")
		}
	})
}
