package backend

// The tokens and secrets the tests use, pure and integration alike.

const (
	aliceToken  = "alice-admin-token-0123456789-abcdef"
	viewerToken = "vera-viewer-token-0123456789-abcdef"
)

// The tokens of newEnv's service.
const (
	testAdminToken  = "test-admin-token-0123456789-abcdefgh"
	testShopToken   = "test-shop-token-0123456789-abcdefghi"
	testViewerToken = "test-viewer-token-0123456789-abcdefg"
)

var (
	adminAuth = map[string]string{"Authorization": "Bearer " + testAdminToken}
	shopAuth  = map[string]string{"Authorization": "Bearer " + testShopToken}
)

const (
	hookSecretNew = "hook-secret-new-0123456789"
	hookSecretOld = "hook-secret-old-0123456789"
)
