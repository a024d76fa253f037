// Package modelserver is a scripted model server for offline tests: one
// HTTP server that speaks the Anthropic Messages API (what `claude -p`
// calls), the Gemini API (what `gemini` calls) and the OpenAI Responses API
// (what `codex exec` calls), and answers from a Scenario instead of a model.
//
// The real CLIs are pointed at it through the environment returned by
// Server.ClaudeEnv, Server.GeminiEnv and Server.CodexEnv (with
// Server.OpenAIBaseURL as codex's model provider base_url). A scenario lists, per API, scripts of
// turns ("call Write, then Bash, then say done"); the server picks the
// script from the request's user text and the turn from the tool results
// already present in the request's history (never by counting assistant
// messages: claude merges messages, replays resumed sessions and sends
// role "system" messages; codex replays a resumed thread's items).
//
// A test starts a server, runs the real CLI against it and then asserts
// on Server.Requests (what the CLI sent: UserTexts, ToolResults) and on what
// the tools did:
//
//	srv, err := modelserver.Start(sc, modelserver.WithLogf(t.Logf))
//	...
//	defer srv.Close()
//	cmd.Env = append(baseEnv, srv.ClaudeEnv()...)
package modelserver
