package ytlocal

import (
	"bytes"
	"testing"

	"go.ytsaurus.tech/yt/go/guid"
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

// FuzzOpRecord feeds arbitrary bytes to the replay of the scheduler's log records and
// snapshot: each is applied or refused with an error — never a panic — and an operation
// restored from a start record is running with the tasks of its spec until a finish record
// ends it.
func FuzzOpRecord(f *testing.F) {
	for _, s := range []string{
		`{kind=start;id="1-2-3e8-4";user=root;spec={tasks={w={command=x;job_count=1}}};start=1}`,
		`{kind=finish;id="1-2-3e8-4";state=aborted;error={code=1;message=m};finish=2}`,
		`{kind=finish;id="9-9-3e8-9";state=failed}`, `{kind=other;id="1-2-3-4"}`, `{id=x}`, `[]`, `#`,
		`[{kind=start;id="1-2-3e8-4";spec={tasks={w={command=x;job_count=2}}}};{kind=finish;id="1-2-3e8-4";state=completed}]`,
		`[{kind=start;id="1-2-3e8-4";spec={tasks={w={command=x;job_count=2}}}};{kind=finish;id="1-2-3e8-4";state=running}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		e := &opsExt{ops: map[guid.GUID]*operation{}, jobs: map[guid.GUID]*job{}, revive: map[guid.GUID]bool{}, closingAborted: map[guid.GUID]bool{}}
		if e.Apply(data) != nil {
			_ = e.Restore(bytes.NewReader(data))
		}
		for id, op := range e.ops {
			if op.state == opRunning && !e.revive[id] {
				t.Fatalf("operation %s restored running but not to be revived", id)
			}
			if e.revive[id] && op.state != opRunning {
				t.Fatalf("operation %s is %s and to be revived", id, op.state)
			}
			if len(op.tasks) != len(op.spec.tasks) || len(op.tasks) == 0 {
				t.Fatalf("operation %s restored with %d tasks of %d", id, len(op.tasks), len(op.spec.tasks))
			}
		}
	})
}
