# aspen_add_codelets(): precompile a codelet file with aspen-cc at build time.
