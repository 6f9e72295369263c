mod debian/throttlekit.ini
