"""SREGym fault pack: bad blocks under a datastore's volume."""
