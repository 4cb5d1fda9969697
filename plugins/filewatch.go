package plugins

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// FileWatch watches one file, such as an operator's configuration file.
type FileWatch struct {
	fw   *fsnotify.Watcher
	stop chan struct{}
	done chan struct{}
}

// WatchFile calls onChange after file changes — written in place,
// replaced by a rename, created or removed — once per burst of changes
// followed by debounce of quiet, on a goroutine that Close stops. It
// watches the file's directory, so a file replaced by a rename (as editors
// and deploy tools do) stays watched.
func WatchFile(file string, debounce time.Duration, onChange func()) (*FileWatch, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, err
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watching %s: %w", file, err)
	}
	if err := fw.Add(filepath.Dir(abs)); err != nil {
		fw.Close()
		return nil, fmt.Errorf("watching %s: %w", file, err)
	}
	w := &FileWatch{fw: fw, stop: make(chan struct{}), done: make(chan struct{})}
	go w.run(abs, debounce, onChange)
	return w, nil
}

func (w *FileWatch) run(file string, debounce time.Duration, onChange func()) {
	defer close(w.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-w.stop:
			return
		case ev, ok := <-w.fw.Events:
			if !ok {
				return
			}
			if filepath.Clean(ev.Name) == file {
				timer.Reset(debounce)
			}
		case _, ok := <-w.fw.Errors:
			if !ok {
				return
			}
			timer.Reset(debounce) // events may have been lost: read it again
		case <-timer.C:
			onChange()
		}
	}
}

// Close stops the goroutine and waits for it.
func (w *FileWatch) Close() error {
	close(w.stop)
	<-w.done
	return w.fw.Close()
}
