// runquery.h
#include "runquery.h"
