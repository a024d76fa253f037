package githubfake

// The part of GitHub's GraphQL schema the fake serves, with GitHub's
// names and types. A field outside it gets GitHub's "Field 'x' doesn't
// exist on type 'Y'" error, never a silent null.

// gqlFieldDef is a field: its type ("Int!", "[Foo]") and its arguments.
type gqlFieldDef struct {
	typ  string
	args map[string]string
}

func f(typ string) gqlFieldDef { return gqlFieldDef{typ: typ} }

func fa(typ string, args map[string]string) gqlFieldDef { return gqlFieldDef{typ: typ, args: args} }

var connectionArgs = map[string]string{"first": "Int", "last": "Int", "after": "String", "before": "String"}

var actorFields = map[string]gqlFieldDef{
	"login":        f("String!"),
	"url":          f("URI!"),
	"resourcePath": f("URI!"),
	"avatarUrl":    fa("URI!", map[string]string{"size": "Int"}),
}

func withActor(extra map[string]gqlFieldDef) map[string]gqlFieldDef {
	out := map[string]gqlFieldDef{"id": f("ID!"), "databaseId": f("Int")}
	for k, v := range actorFields {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

// gqlTypes are the object and interface types, by name.
var gqlTypes = map[string]map[string]gqlFieldDef{
	"Query": {
		"viewer":     f("User!"),
		"repository": fa("Repository", map[string]string{"owner": "String!", "name": "String!", "followRenames": "Boolean"}),
		"node":       fa("Node", map[string]string{"id": "ID!"}),
		"rateLimit":  fa("RateLimit", map[string]string{"dryRun": "Boolean"}),
	},
	"Mutation": {
		"resolveReviewThread":           fa("ResolveReviewThreadPayload", map[string]string{"input": "ResolveReviewThreadInput!"}),
		"unresolveReviewThread":         fa("UnresolveReviewThreadPayload", map[string]string{"input": "UnresolveReviewThreadInput!"}),
		"markPullRequestReadyForReview": fa("MarkPullRequestReadyForReviewPayload", map[string]string{"input": "MarkPullRequestReadyForReviewInput!"}),
		"convertPullRequestToDraft":     fa("ConvertPullRequestToDraftPayload", map[string]string{"input": "ConvertPullRequestToDraftInput!"}),
	},
	"Node":            {"id": f("ID!")},
	"Actor":           actorFields,
	"RepositoryOwner": withActor(nil),
	"User":            withActor(map[string]gqlFieldDef{"name": f("String")}),
	"Bot":             withActor(nil),
	"Organization":    withActor(map[string]gqlFieldDef{"name": f("String")}),
	"RateLimit": {
		"cost": f("Int!"), "limit": f("Int!"), "nodeCount": f("Int!"), "remaining": f("Int!"),
		"resetAt": f("DateTime!"), "used": f("Int!"),
	},
	"Repository": {
		"id": f("ID!"), "databaseId": f("Int"), "name": f("String!"), "nameWithOwner": f("String!"),
		"owner": f("RepositoryOwner!"), "url": f("URI!"), "isPrivate": f("Boolean!"),
		"visibility": f("RepositoryVisibility!"), "viewerPermission": f("RepositoryPermission"),
		"defaultBranchRef": f("Ref"),
		"pullRequest":      fa("PullRequest", map[string]string{"number": "Int!"}),
	},
	"Ref": {"name": f("String!"), "prefix": f("String!"), "target": f("Commit")},
	"Commit": {
		"oid": f("GitObjectID!"), "abbreviatedOid": f("String!"),
	},
	"PullRequest": {
		"id": f("ID!"), "databaseId": f("Int"), "fullDatabaseId": f("BigInt"), "number": f("Int!"),
		"title": f("String!"), "body": f("String!"), "url": f("URI!"), "state": f("PullRequestState!"),
		"isDraft": f("Boolean!"), "closed": f("Boolean!"), "merged": f("Boolean!"), "author": f("Actor"),
		"headRefName": f("String!"), "headRefOid": f("GitObjectID!"), "baseRefName": f("String!"),
		"baseRefOid": f("GitObjectID!"), "createdAt": f("DateTime!"), "updatedAt": f("DateTime!"),
		"repository":    f("Repository!"),
		"reviewThreads": fa("PullRequestReviewThreadConnection!", connectionArgs),
	},
	"PageInfo": {
		"hasNextPage": f("Boolean!"), "hasPreviousPage": f("Boolean!"), "startCursor": f("String"), "endCursor": f("String"),
	},
	"PullRequestReviewThreadConnection": {
		"nodes": f("[PullRequestReviewThread]"), "edges": f("[PullRequestReviewThreadEdge]"),
		"pageInfo": f("PageInfo!"), "totalCount": f("Int!"),
	},
	"PullRequestReviewThreadEdge": {"cursor": f("String!"), "node": f("PullRequestReviewThread")},
	"PullRequestReviewThread": {
		"id": f("ID!"), "isResolved": f("Boolean!"), "isOutdated": f("Boolean!"), "isCollapsed": f("Boolean!"),
		"path": f("String!"), "line": f("Int"), "startLine": f("Int"), "originalLine": f("Int"),
		"originalStartLine": f("Int"), "diffSide": f("DiffSide!"), "startDiffSide": f("DiffSide"),
		"subjectType": f("PullRequestReviewThreadSubjectType!"), "resolvedBy": f("User"),
		"viewerCanResolve": f("Boolean!"), "viewerCanUnresolve": f("Boolean!"), "viewerCanReply": f("Boolean!"),
		"comments":    fa("PullRequestReviewCommentConnection!", map[string]string{"first": "Int", "last": "Int", "after": "String", "before": "String", "skip": "Int"}),
		"pullRequest": f("PullRequest!"), "repository": f("Repository!"),
	},
	"PullRequestReviewCommentConnection": {
		"nodes": f("[PullRequestReviewComment]"), "edges": f("[PullRequestReviewCommentEdge]"),
		"pageInfo": f("PageInfo!"), "totalCount": f("Int!"),
	},
	"PullRequestReviewCommentEdge": {"cursor": f("String!"), "node": f("PullRequestReviewComment")},
	"PullRequestReviewComment": {
		"id": f("ID!"), "databaseId": f("Int"), "fullDatabaseId": f("BigInt"), "body": f("String!"),
		"author": f("Actor"), "path": f("String!"), "line": f("Int"), "startLine": f("Int"),
		"originalLine": f("Int"), "originalStartLine": f("Int"), "diffHunk": f("String!"), "url": f("URI!"),
		"createdAt": f("DateTime!"), "updatedAt": f("DateTime!"), "replyTo": f("PullRequestReviewComment"),
		"outdated": f("Boolean!"), "state": f("PullRequestReviewCommentState!"),
		"pullRequestReview": f("PullRequestReview"), "pullRequest": f("PullRequest!"),
		"commit": f("Commit"), "originalCommit": f("Commit"),
		"authorAssociation": f("CommentAuthorAssociation!"), "viewerDidAuthor": f("Boolean!"),
	},
	"PullRequestReview": {
		"id": f("ID!"), "databaseId": f("Int"), "fullDatabaseId": f("BigInt"), "state": f("PullRequestReviewState!"),
		"body": f("String!"), "author": f("Actor"), "submittedAt": f("DateTime"), "url": f("URI!"),
		"commit": f("Commit"), "pullRequest": f("PullRequest!"),
	},
	"ResolveReviewThreadPayload":           {"clientMutationId": f("String"), "thread": f("PullRequestReviewThread")},
	"UnresolveReviewThreadPayload":         {"clientMutationId": f("String"), "thread": f("PullRequestReviewThread")},
	"MarkPullRequestReadyForReviewPayload": {"clientMutationId": f("String"), "pullRequest": f("PullRequest")},
	"ConvertPullRequestToDraftPayload":     {"clientMutationId": f("String"), "pullRequest": f("PullRequest")},
}

// gqlInterfaces lists the object types implementing each interface.
var gqlInterfaces = map[string][]string{
	"Node":            {"User", "Bot", "Organization", "Repository", "PullRequest", "PullRequestReviewThread", "PullRequestReviewComment", "PullRequestReview", "Commit", "Ref"},
	"Actor":           {"User", "Bot", "Organization"},
	"RepositoryOwner": {"User", "Organization"},
}

var gqlEnums = map[string][]string{
	"DiffSide":                           {"LEFT", "RIGHT"},
	"PullRequestState":                   {"OPEN", "CLOSED", "MERGED"},
	"PullRequestReviewState":             {"PENDING", "COMMENTED", "APPROVED", "CHANGES_REQUESTED", "DISMISSED"},
	"PullRequestReviewCommentState":      {"PENDING", "SUBMITTED"},
	"PullRequestReviewThreadSubjectType": {"LINE", "FILE"},
	"RepositoryPermission":               {"ADMIN", "MAINTAIN", "WRITE", "TRIAGE", "READ"},
	"RepositoryVisibility":               {"PRIVATE", "PUBLIC", "INTERNAL"},
	"CommentAuthorAssociation":           {"MEMBER", "OWNER", "MANNEQUIN", "COLLABORATOR", "CONTRIBUTOR", "FIRST_TIME_CONTRIBUTOR", "FIRST_TIMER", "NONE"},
}

var gqlScalars = map[string]bool{
	"String": true, "Int": true, "Float": true, "Boolean": true, "ID": true,
	"DateTime": true, "URI": true, "BigInt": true, "GitObjectID": true,
}

var gqlInputs = map[string]map[string]string{
	"ResolveReviewThreadInput":           {"threadId": "ID!", "clientMutationId": "String"},
	"UnresolveReviewThreadInput":         {"threadId": "ID!", "clientMutationId": "String"},
	"MarkPullRequestReadyForReviewInput": {"pullRequestId": "ID!", "clientMutationId": "String"},
	"ConvertPullRequestToDraftInput":     {"pullRequestId": "ID!", "clientMutationId": "String"},
}

func isLeafType(name string) bool {
	_, enum := gqlEnums[name]
	return gqlScalars[name] || enum
}

// possibleTypes is the set of object types a type condition covers.
func possibleTypes(name string) map[string]bool {
	out := map[string]bool{}
	if impls, ok := gqlInterfaces[name]; ok {
		for _, t := range impls {
			out[t] = true
		}
	} else {
		out[name] = true
	}
	return out
}

// overlaps reports whether a fragment on cond can apply inside parent.
func overlaps(parent, cond string) bool {
	a, b := possibleTypes(parent), possibleTypes(cond)
	for t := range a {
		if b[t] {
			return true
		}
	}
	return false
}
