package main

// Peak RSS of one process, measured two ways.
//
// wait4's ru_maxrss (what os/exec exposes as ProcessState.SysUsage) is not
// the child's own peak on Linux: exec_mmap() folds the high-water mark of
// the pre-exec address space into it, and os/exec starts children with
// clone(CLONE_VM|CLONE_VFORK), so that address space is the harness's own.
// A child can therefore never report less than the harness's RSS (try
// /bin/true from a Go program that holds 100 MB: it "uses" 100 MB). It
// also includes the peaks of the child's own waited-for children.
//
// So the primary figure is VmHWM, the high-water mark of the address space
// the child got at exec: the child is started under ptrace with
// PTRACE_O_TRACEEXIT, and /proc/<tid>/status is read while it is stopped
// on its way out, after all its work, before its memory is gone. It covers
// that one process, not the processes it runs. wait4's Maxrss is reported
// beside it, with the harness's own RSS (its floor).

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/cniplugins/cniplugins/internal/benchstat"
)

// rssSample is one traced run.
type rssSample struct {
	hwm    int64 // KiB, VmHWM of the exec'd image
	maxrss int64 // KiB, wait4 rusage
	// At the exit stop: resident anonymous memory (heap, stacks, runtime
	// data) and resident file-backed memory (the binary's pages touched).
	anon, file int64
}

type rssResult struct {
	samples    []rssSample
	harnessRSS int64 // KiB, harness VmHWM when the samples were taken
}

func (r rssResult) medianHWM() int64 {
	xs := make([]int64, len(r.samples))
	for i, s := range r.samples {
		xs[i] = s.hwm
	}
	return benchstat.Median(xs)
}

func (r rssResult) medianOf(f func(rssSample) int64) int64 {
	xs := make([]int64, len(r.samples))
	for i, s := range r.samples {
		xs[i] = f(s)
	}
	return benchstat.Median(xs)
}

func (r rssResult) medianMaxrss() int64 {
	xs := make([]int64, len(r.samples))
	for i, s := range r.samples {
		xs[i] = s.maxrss
	}
	return benchstat.Median(xs)
}

// measureRSS runs o.rssRuns traced ADDs (each undone by an untimed DEL)
// per subject on an empty state directory, subjects alternating.
func measureRSS(o *options, subs []subject, r *results) error {
	r.rss = map[string]*rssResult{}
	for _, s := range subs {
		r.rss[s.key] = &rssResult{}
	}
	for i := 0; i < o.rssRuns; i++ {
		for j := range subs {
			s := subs[(i+j)%len(subs)]
			dataDir := filepath.Join(o.tmp, "rss-"+s.key)
			cid := containerID(fmt.Sprintf("rss-%d-%s", i, s.key))
			c := s.call("ADD", cid, dataDir, nil)
			sample, out, err := traced(c)
			if err != nil {
				return fmt.Errorf("%s: peak RSS: %v", s.label, err)
			}
			if _, err := mustRun(s.call("DEL", cid, dataDir, out.stdout)); err != nil {
				return err
			}
			r.rss[s.key].samples = append(r.rss[s.key].samples, sample)
		}
	}
	self := vmHWM("self")
	for _, s := range subs {
		r.rss[s.key].harnessRSS = self
	}
	return nil
}

// traced runs c under ptrace, following every thread of the child (not
// its own children), and reads VmHWM at each thread's PTRACE_EVENT_EXIT
// stop: the last one is after all the work, while the address space still
// exists. Whichever thread calls exit_group is the one that stops (the
// others are killed without stopping on recent kernels), hence all threads.
// The harness reaps the child itself, so os/exec is not used here; this
// must not run while other children of the harness are alive (it waits
// for any child).
func traced(c call) (rssSample, outcome, error) {
	// The tracer is the thread that forked; every ptrace request must come
	// from it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var pipes [3][2]*os.File // stdin, stdout, stderr: {read, write}
	for i := range pipes {
		r, w, err := os.Pipe()
		if err != nil {
			return rssSample{}, outcome{}, err
		}
		pipes[i] = [2]*os.File{r, w}
	}
	attr := &os.ProcAttr{Env: c.environ(), Files: []*os.File{pipes[0][0], pipes[1][1], pipes[2][1]},
		Sys: &syscall.SysProcAttr{Ptrace: true}}
	p, err := os.StartProcess(c.path, []string{c.path}, attr)
	pipes[0][0].Close()
	pipes[1][1].Close()
	pipes[2][1].Close()
	if err != nil {
		pipes[0][1].Close()
		pipes[1][0].Close()
		pipes[2][0].Close()
		return rssSample{}, outcome{}, err
	}
	defer p.Release()
	go func() {
		_, _ = pipes[0][1].Write(c.stdin)
		pipes[0][1].Close()
	}()
	var stdout, stderr bytes.Buffer
	var wg sync.WaitGroup
	for _, pr := range []struct {
		dst *bytes.Buffer
		src *os.File
	}{{&stdout, pipes[1][0]}, {&stderr, pipes[2][0]}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = io.Copy(pr.dst, pr.src)
			pr.src.Close()
		}()
	}
	hwm, atExit, ws, ru, terr := followToExit(p.Pid)
	wg.Wait()
	o := outcome{stdout: stdout.Bytes(), stderr: stderr.Bytes(), maxrss: ru.Maxrss}
	switch {
	case ws.Exited():
		o.exit = ws.ExitStatus()
	default:
		o.exit = -1
	}
	if terr != nil {
		return rssSample{}, o, terr
	}
	if err := o.check(c); err != nil {
		return rssSample{}, o, err
	}
	if hwm <= 0 {
		return rssSample{}, o, fmt.Errorf("no exit stop with a VmHWM was seen")
	}
	return rssSample{hwm: hwm, maxrss: ru.Maxrss, anon: atExit["Anonymous"],
		file: atExit["Rss"] - atExit["Anonymous"] - atExit["Shmem"]}, o, nil
}

// followToExit resumes the child from its post-exec stop and passes its
// signals through until it is reaped. On a tracing error it kills the
// child and still reaps it.
func followToExit(pid int) (hwm int64, atExit map[string]int64, status syscall.WaitStatus, ru syscall.Rusage, err error) {
	var ws syscall.WaitStatus
	fail := func(e error) {
		if err == nil {
			err = e
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if _, e := syscall.Wait4(pid, &ws, syscall.WALL, &ru); e != nil {
		return 0, nil, ws, ru, fmt.Errorf("wait for the exec stop: %v", e)
	}
	if !ws.Stopped() {
		return 0, nil, ws, ru, fmt.Errorf("child did not stop after exec (status %#x)", uint32(ws))
	}
	if e := syscall.PtraceSetOptions(pid, syscall.PTRACE_O_TRACEEXIT|syscall.PTRACE_O_TRACECLONE|ptraceOExitKill); e != nil {
		fail(fmt.Errorf("PTRACE_SETOPTIONS: %v", e))
	}
	if e := syscall.PtraceCont(pid, 0); e != nil {
		fail(fmt.Errorf("PTRACE_CONT: %v", e))
	}
	for {
		var r syscall.Rusage
		tid, e := syscall.Wait4(-1, &ws, syscall.WALL, &r)
		if e == syscall.EINTR {
			continue
		}
		if e != nil {
			fail(fmt.Errorf("wait: %v", e))
			return hwm, atExit, ws, ru, err
		}
		if ws.Exited() || ws.Signaled() {
			if tid == pid { // the leader is reported after every other thread
				return hwm, atExit, ws, r, err
			}
			continue
		}
		if !ws.Stopped() {
			continue
		}
		sig := 0
		switch {
		case ws.StopSignal() == syscall.SIGTRAP && ws.TrapCause() == syscall.PTRACE_EVENT_EXIT:
			if h := vmHWM(strconv.Itoa(tid)); h >= hwm {
				hwm, atExit = h, rollup(strconv.Itoa(tid))
			}
		case ws.StopSignal() == syscall.SIGTRAP, ws.StopSignal() == syscall.SIGSTOP:
			// clone events, and a new thread's initial stop
		default:
			sig = int(ws.StopSignal()) // SIGCHLD, SIGURG, …: deliver it
		}
		_ = syscall.PtraceCont(tid, sig) // ESRCH when it was killed meanwhile
	}
}

// ptraceOExitKill is PTRACE_O_EXITKILL: if the harness dies, so does the
// tracee.
const ptraceOExitKill = 0x100000

// rollup reads /proc/<pid>/smaps_rollup's KiB fields (Rss, Anonymous, …).
func rollup(pid string) map[string]int64 {
	out := map[string]int64{}
	b, err := os.ReadFile("/proc/" + pid + "/smaps_rollup")
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64); err == nil {
			out[k] = n
		}
	}
	return out
}

// vmHWM reads VmHWM (KiB) from /proc/<pid>/status; -1 if absent.
func vmHWM(pid string) int64 {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return -1
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return -1
}
