#!/bin/sh
# The php-fpm test on a Redis store: not yet possible, and said so.
echo "SKIP: libthrottlekit has no Redis store yet (tk_store_open(\"redis://...\")" \
	"returns -ENOTSUP, which the extension throws as ThrottleKit\\Exception);" \
	"run fpm.sh's steps on redis:// when the library gains it"
exit 77
