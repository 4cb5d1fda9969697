package wasmtask

import (
	_ "github.com/fsnotify/fsnotify"
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/hashicorp/golang-lru/v2/expirable"
	_ "github.com/modelcontextprotocol/go-sdk/mcp"
	_ "github.com/tetratelabs/wazero"
)
