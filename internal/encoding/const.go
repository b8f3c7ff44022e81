package encoding

// Format constants. docs/format/tuples.md lists every one of them with its
// value; TestFormatDocConstants keeps the two in step.
const (
	// DiskTimestampsVersion is the version of the on-disk timestamp column
	// layout (AppendScaledTimestamps). The block writer records it in the
	// header of the file that holds the columns; readers reject other values.
	DiskTimestampsVersion = 1
	// DiskColumnVersion is the version of the on-disk value column layout
	// (AppendColumn and AppendColumnMeta), recorded like DiskTimestampsVersion.
	DiskColumnVersion = 1

	// DefaultTupleSize is the number of rows per tuple Aerie uses unless
	// configured otherwise (Heracles' paper uses 8, its code 4).
	DefaultTupleSize = 8
	// MaxTupleSize is the largest number of values in one head value tuple or
	// rows in one on-disk tuple.
	MaxTupleSize = 255
	// DiskBlockTuples is the default number of tuples per disk block, the
	// unit whose tuples are padded to one width.
	DiskBlockTuples = 10
	// MaxRows is the largest number of rows of one on-disk timestamp or value
	// column. It bounds what a decoder allocates from a length field.
	MaxRows = 1 << 24

	// ColumnSparse flags a column with absent rows: each tuple starts with a
	// presence bitmap.
	ColumnSparse uint8 = 1
	// ColumnConst flags a column whose rows are all present and bit-identical
	// to Bases[0]; it has no data bytes.
	ColumnConst uint8 = 2
)
