"""Virtual-phone data (a package so setuptools ships its files)."""
