// Package githubfake is a stateful fake of the GitHub API for spawn's
// tests: REST (the operations of the OpenAPI subset in
// testdata/github-openapi-subset.json) and GraphQL (review threads,
// resolving them, ready-for-review), backed by real bare git repositories
// that tests push to with the git CLI.
//
// It is faithful rather than permissive. Pull request files, diffs and
// comment anchors are computed from the commits in the bare repository
// (git diff base...head); a review comment on a line outside the diff is
// refused with GitHub's 422 and the whole review with it; an author cannot
// approve their own pull request; tokens map to identities with
// collaborator roles; lists paginate with Link headers; every response
// carries x-ratelimit-* headers. Every request and response is validated
// against the OpenAPI description with kin-openapi: a request that breaks
// it gets GitHub's 400 or 422, and a response of the fake that breaks it
// is reported as a test failure, so the fake cannot drift from GitHub's
// shapes. GraphQL documents are read with gqlparser's parser; the fake
// checks and runs them against its own part of GitHub's schema, with
// GitHub's error wordings. Faults (5xx before or after the effect, primary and secondary
// rate limits, 401) are injected per request with Inject.
//
// A test starts a server, registers identities and repositories, pushes
// with git, and points the client at URL and GraphQLURL:
//
//	srv := githubfake.New(t)
//	require.NoError(t, srv.AddUser("alice", "alice-token", githubfake.PermissionWrite))
//	require.NoError(t, srv.AddRepo("acme", "app", "main", githubfake.SeedFrom(local)))
//	git push srv.RemoteURL("acme", "app") feature
//	client := github.NewClient(nil).WithAuthToken("alice-token")
//	client.BaseURL, _ = url.Parse(srv.URL() + "/")
//
// Where GitHub and its description disagree the fake follows GitHub and
// says so where it does: the reply form of POST .../pulls/{n}/comments
// ({body, in_reply_to}, what go-github's CreateCommentInReplyTo sends) is
// accepted without the commit_id and path the description requires.
// Outdated comments leave line and position out instead of sending null,
// which the description does not allow. Error wordings that no public
// GitHub response shows (marked in the code) are the fake's best guess.
// Forks, merges, branch protection and GitHub Apps other than Actions'
// token are not modelled.
package githubfake
