#include "../gps-variant.h"
