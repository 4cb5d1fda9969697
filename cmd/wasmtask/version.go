package main

// version is reported as the MCP serverInfo version; release builds set it
// with -ldflags "-X main.version=v1.2.3".
var version = "dev"
