// The Go object-store client (nats.go's ObjectStore) as a test peer:
//
//	peer <op> <url> <bucket> [args]
//
// Prints one JSON line; exits non-zero with the error on stderr. The ops are those of
// tests/interop_js/peer.mjs: put NAME FILE, get NAME FILE, info NAME, link NAME TARGET,
// list, delete NAME.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/nats-io/nats.go"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(argv []string) error {
	if len(argv) < 3 {
		return fmt.Errorf("usage: peer <op> <url> <bucket> [args]")
	}
	op, url, bucket, args := argv[0], argv[1], argv[2], argv[3:]
	nc, err := nats.Connect(url)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := nc.JetStream()
	if err != nil {
		return err
	}
	store, err := js.ObjectStore(bucket)
	if err != nil {
		return err
	}
	out, err := apply(store, op, args)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}

func apply(store nats.ObjectStore, op string, args []string) (any, error) {
	switch op {
	case "put":
		file, err := os.Open(args[1])
		if err != nil {
			return nil, err
		}
		defer file.Close()
		meta := &nats.ObjectMeta{Name: args[0], Description: "written by nats.go"}
		return store.Put(meta, file)
	case "get":
		if err := store.GetFile(args[0], args[1]); err != nil {
			return nil, err
		}
		return store.GetInfo(args[0])
	case "info":
		return store.GetInfo(args[0])
	case "link":
		target, err := store.GetInfo(args[1])
		if err != nil {
			return nil, err
		}
		return store.AddLink(args[0], target)
	case "list":
		infos, err := store.List()
		if err == nats.ErrNoObjectsFound {
			return []string{}, nil
		} else if err != nil {
			return nil, err
		}
		names := make([]string, 0, len(infos))
		for _, info := range infos {
			names = append(names, info.Name)
		}
		return names, nil
	case "delete":
		return nil, store.Delete(args[0])
	}
	return nil, fmt.Errorf("unknown op %s", op)
}
