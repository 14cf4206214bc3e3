package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"
)

// watch shows a sale's status, refreshed every interval, until Ctrl-C (or -n frames). On a
// terminal each frame replaces the previous one; piped, frames follow each other.
func (c *cli) watch(ctx context.Context, args []string) error {
	fs := c.flags("watch")
	interval := fs.Duration("interval", time.Second, "refresh period")
	frames := fs.Int("n", 0, "stop after this many frames (0: until interrupted)")
	pos, err := c.parse(fs, args, "SALE")
	if err != nil {
		return err
	}
	if *interval < 100*time.Millisecond {
		return fmt.Errorf("%w: -interval must be at least 100ms", errUsage)
	}
	clear := isTerminal(c.out) && c.output == "table"
	tick := time.NewTicker(*interval)
	defer tick.Stop()
	var prev *saleStatus
	var prevAt time.Time
	for i := 0; *frames == 0 || i < *frames; i++ {
		st, raw, err := c.getStatus(ctx, pos[0])
		now := time.Now()
		switch {
		case err != nil && ctx.Err() != nil:
			return nil
		case err != nil:
			fmt.Fprintf(c.out, "%s  %v\n", now.Format("15:04:05"), err)
		case c.output == "json":
			fmt.Fprintln(c.out, string(raw))
		default:
			if clear {
				fmt.Fprint(c.out, "\033[H\033[2J")
			}
			fmt.Fprintf(c.out, "%s  sale %s  (every %s, Ctrl-C to stop)\n", now.Format("15:04:05"), st.ID, *interval)
			rows := statusRows(st)
			if prev != nil {
				dt := now.Sub(prevAt).Seconds()
				rows = append(rows, []string{"buyers /s", strconv.FormatFloat(float64(st.Buyers-prev.Buyers)/dt, 'f', 1, 64)},
					[]string{"orders created /s", strconv.FormatFloat(float64(st.Orders["created"]-prev.Orders["created"])/dt, 'f', 1, 64)})
			}
			table(c.out, rows)
			fmt.Fprintln(c.out)
			prev, prevAt = &st, now
		}
		if *frames != 0 && i == *frames-1 {
			break
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
	return nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
