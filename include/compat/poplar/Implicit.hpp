// Poplar client code often uses standard functions without including their headers, relying on
// Poplar's headers to bring them in; the compatibility headers do the same.
#pragma once

#include <cassert>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>
