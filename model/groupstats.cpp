// groupstats.h
#include "groupstats.h"
