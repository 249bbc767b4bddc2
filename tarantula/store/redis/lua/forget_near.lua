-- ARGV: prefix, URL hash. The URL's page is not stored (not after all, or no longer): its
-- fingerprint goes.
-- Loaded after: time.lua, documents.lua.
forget_fingerprint(ARGV[2])
return 1
