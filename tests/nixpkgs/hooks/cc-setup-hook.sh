# Stand-in for the cc-wrapper setup hook: name the compilers like the real one does.
export CC=@cc@
export CXX=@cxx@
